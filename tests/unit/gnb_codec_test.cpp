#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <volley/wire/crc32c.hpp>
#include <volley/wire/error.hpp>
#include <volley/gnb/protocol.hpp>

#include "bytes.hpp"

using namespace volley::wire;
using namespace volley::gnb;
using volley::test::bytes_of;
using volley::test::hex;

TEST(GnbEncode, SeedExampleControl64) {
  std::vector<std::byte> body(64, std::byte{0xAB});
  std::vector<std::byte> out(100);
  const std::size_t n = encode_frame(MessageType::control, body, out);
  ASSERT_EQ(n, 70u);
  EXPECT_EQ(hex({out.data(), 6}), "10 01 00 00 00 40");
}

TEST(GnbEncode, SeedExampleData1200Header) {
  std::vector<std::byte> body(1200);
  std::vector<std::byte> out(1206);
  ASSERT_EQ(encode_frame(MessageType::data, body, out), 1206u);
  EXPECT_EQ(hex({out.data(), 6}), "80 01 00 00 04 b0");
}

TEST(GnbEncode, LargestLegalDataMessage) {
  std::vector<std::byte> body(kMaxBodyLength, std::byte{7});
  std::vector<std::byte> out(kMaxFrameSize);
  ASSERT_EQ(encode_frame(MessageType::data, body, out), kMaxFrameSize);
  EXPECT_EQ(hex({out.data(), 6}), "80 01 00 01 00 00");
}

TEST(GnbEncode, RejectsBodiesOutsideTheTypeLimits) {
  std::vector<std::byte> out(kMaxFrameSize + 16);
  std::error_code ec;
  struct Case {
    MessageType type;
    std::size_t bad_long;
    std::size_t bad_short;  // SIZE_MAX where no body is too short
  };
  for (const Case c : {Case{MessageType::control, 65, 3}, Case{MessageType::ack, 17, 3},
                       Case{MessageType::nack, 13, 5}, Case{MessageType::ack_checksum, 17, 7},
                       Case{MessageType::data, kMaxBodyLength + 1, SIZE_MAX}}) {
    std::vector<std::byte> body(c.bad_long);
    EXPECT_EQ(encode_frame(c.type, body, out, ec), 0u);
    EXPECT_EQ(ec, Errc::body_too_long);
    if (c.bad_short != SIZE_MAX) {
      body.resize(c.bad_short);
      EXPECT_EQ(encode_frame(c.type, body, out, ec), 0u);
      EXPECT_EQ(ec, Errc::body_too_short);
    }
  }
  std::vector<std::byte> small(5);
  std::vector<std::byte> body(4);
  EXPECT_EQ(encode_frame(MessageType::control, body, small, ec), 0u);
  EXPECT_EQ(ec, Errc::buffer_too_small);
  EXPECT_THROW(encode_frame(MessageType::control, body, small), std::system_error);
}

TEST(GnbReplies, ByteExactAckNackAndChecksum) {
  EXPECT_EQ(hex(make_ack_frame(Ack{0x01020304})), "10 02 00 00 00 04 01 02 03 04");
  EXPECT_EQ(hex(make_nack_frame(Nack{0x0000002A, NackCause::body_too_long})),
            "10 03 00 00 00 06 00 00 00 2a 00 02");
  EXPECT_EQ(hex(make_ack_checksum_frame(AckChecksum{7, 0xE3069283})),
            "10 04 00 00 00 08 00 00 00 07 e3 06 92 83");
}

TEST(GnbReplies, ParsersRoundTripAndCheckSizes) {
  const auto control_body = bytes_of("\x00\x00\x00\x09hello");
  const auto control = parse_control(control_body);
  ASSERT_TRUE(control);
  EXPECT_EQ(control->transaction_id, 9u);
  EXPECT_EQ(control->payload.size(), 5u);
  EXPECT_FALSE(parse_control(bytes_of("\x00\x00\x00")));

  const auto nack = make_nack_frame(Nack{5, NackCause::body_too_short});
  const auto parsed = parse_nack(std::span(nack).subspan(kHeaderSize));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->transaction_id, 5u);
  EXPECT_EQ(parsed->cause, NackCause::body_too_short);

  const auto ack = make_ack_checksum_frame(AckChecksum{1, 2});
  const auto parsed_ack = parse_ack_checksum(std::span(ack).subspan(kHeaderSize));
  ASSERT_TRUE(parsed_ack);
  EXPECT_EQ(parsed_ack->crc32c, 2u);
  EXPECT_FALSE(parse_ack(std::vector<std::byte>(17)));
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c_portable(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
  // RFC 3720 B.4: 32 bytes of zeros and of 0xFF.
  EXPECT_EQ(crc32c(std::vector<std::byte>(32, std::byte{0})), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::vector<std::byte>(32, std::byte{0xFF})), 0x62A8AB43u);
}

TEST(Crc32c, HardwareAndPortableAgreeAndChain) {
  std::vector<std::byte> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 31 + 7);
  for (std::size_t len : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 1000u}) {
    const std::span<const std::byte> s(data.data(), len);
    EXPECT_EQ(crc32c(s), crc32c_portable(s)) << len;
  }
  const std::span<const std::byte> all(data);
  EXPECT_EQ(crc32c(all.subspan(333), crc32c(all.first(333))), crc32c(all));
}

TEST(WireErrors, HaveMessagesAndCategory) {
  const std::error_code ec = Errc::length_over_maximum;
  EXPECT_STREQ(ec.category().name(), "volley.wire");
  EXPECT_EQ(ec.message(), "length over the protocol maximum");
}
