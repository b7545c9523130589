// The framing side of sessions (no sockets): message headers, heartbeats and the
// gNB keepalive, goodbyes, refusal of what cannot be framed, and the reconnect backoff.
#include <gtest/gtest.h>

#include <volley/net/backoff.hpp>
#include <volley/gnb/session_codec.hpp>
#include <volley/net/session_codec.hpp>
#include <volley/rpc/session_codec.hpp>
#include <volley/wire/error.hpp>

#include "bytes.hpp"

namespace volley::net {
namespace {

using namespace std::chrono_literals;
using test::from_hex;
using test::hex;

void feed(SessionCodec& codec, const std::vector<std::byte>& bytes) {
  auto room = codec.prepare();
  ASSERT_GE(room.size(), bytes.size());
  std::copy(bytes.begin(), bytes.end(), room.begin());
  codec.commit(bytes.size());
}

// What a decoding loop saw, one entry per frame.
struct Seen {
  Inbound::Kind kind;
  std::string bytes, body;
  std::uint32_t id;
  std::error_code error;
  bool operator==(const Seen&) const = default;
  friend void PrintTo(const Seen& s, std::ostream* os) {
    *os << "{kind " << static_cast<int>(s.kind) << ", bytes [" << s.bytes << "], id " << s.id << ", "
        << s.error.message() << "}";
  }
};

Seen seen(Inbound::Kind kind, const Message& m, std::error_code error) {
  return {kind, hex(m.bytes), hex(m.body), m.id, error};
}

// next() alone, frame by frame.
std::vector<Seen> decode_by_next(SessionCodec& codec) {
  std::vector<Seen> out;
  for (Inbound in = codec.next(); in.kind != Inbound::Kind::need_more && in.kind != Inbound::Kind::failed;
       in = codec.next())
    out.push_back(seen(in.kind, in.message, in.error));
  return out;
}

// The session's loop: next_message() first, next() for what it leaves.
std::vector<Seen> decode_as_a_session(SessionCodec& codec, int& fast) {
  std::vector<Seen> out;
  for (;;) {
    if (Message m; codec.next_message(m)) {
      ++fast;
      out.push_back(seen(Inbound::Kind::message, m, {}));
      continue;
    }
    const Inbound in = codec.next();
    if (in.kind == Inbound::Kind::need_more || in.kind == Inbound::Kind::failed) return out;
    out.push_back(seen(in.kind, in.message, in.error));
  }
}

// A codec's next_message() takes every valid message and nothing else: the
// session's loop sees what next() alone sees.
void expect_same_frames(std::unique_ptr<SessionCodec> (*make)(), const char* stream, int messages) {
  auto by_next = make();
  auto as_session = make();
  feed(*by_next, from_hex(stream));
  feed(*as_session, from_hex(stream));
  int fast = 0;
  const auto expected = decode_by_next(*by_next);
  EXPECT_EQ(decode_as_a_session(*as_session, fast), expected);
  EXPECT_EQ(fast, messages);
  EXPECT_EQ(as_session->buffered(), by_next->buffered());
}

TEST(SessionCodecs, TheMessageFastPathTakesValidMessagesOnly) {
  // Checked: message, heartbeat, message, bad checksum, goodbye, empty message, half a frame.
  expect_same_frames([] { return make_checked_codec(1024); },
                     "00 00 07 01 01 68 69  00 00 05 00 00  00 00 06 01 41 41  00 00 07 01 00 68 69  "
                     "00 00 05 02 00  00 00 05 01 00  00 00 07 01",
                     3);
  // gNB: ack, keepalive, data, control with a body over its limit (rejected,
  // the stream in sync), goodbye, nack, an unknown type (fatal: the loop
  // stops there and the ack after it is never taken).
  std::string over_limit = "10 01 00 00 00 41";
  for (int i = 0; i < 0x41; ++i) over_limit += " 00";
  expect_same_frames(gnb::make_gnb_codec,
                     ("10 02 00 00 00 04 DE AD BE EF  00 00 00 00 00 00  80 01 00 00 00 02 01 02  " + over_limit +
                      "  00 00 00 00 00 01 01  10 03 00 00 00 06 00 00 00 07 00 01  77 77 00 00 00 00  "
                      "10 02 00 00 00 04 01 02 03 04")
                         .c_str(),
                     3);
}

TEST(CheckedSessionCodec, FramesAMessageAsTheSeedDoes) {
  auto codec = make_checked_codec(1024);
  std::array<std::byte, SessionCodec::kMaxHeader> header{};
  std::error_code ec;
  const std::string hi = "hi";
  const std::size_t n = codec->frame_header(std::as_bytes(std::span(hi.data(), hi.size())), header, ec);
  ASSERT_FALSE(ec);
  EXPECT_EQ(hex(std::span(header.data(), n)), "00 00 07 01 01");
  EXPECT_EQ(hex(codec->heartbeat()), "00 00 05 00 00");
}

TEST(CheckedSessionCodec, TellsHeartbeatsMessagesAndBadFramesApart) {
  auto codec = make_checked_codec(1024);
  feed(*codec, from_hex("00 00 05 00 00  00 00 07 01 01 68 69  00 00 07 01 00 68 69  00 00 05 01 00"));
  auto in = codec->next();
  EXPECT_EQ(in.kind, Inbound::Kind::heartbeat);
  in = codec->next();
  ASSERT_EQ(in.kind, Inbound::Kind::message);
  EXPECT_EQ(hex(in.message.bytes), "68 69");
  EXPECT_EQ(hex(in.message.body), "68 69");  // no id: the body is the payload
  EXPECT_EQ(in.message.id, 0u);
  in = codec->next();
  EXPECT_EQ(in.kind, Inbound::Kind::rejected);
  EXPECT_EQ(in.error, wire::make_error_code(wire::Errc::bad_checksum));
  in = codec->next();
  ASSERT_EQ(in.kind, Inbound::Kind::message);
  EXPECT_TRUE(in.message.bytes.empty());
  EXPECT_EQ(codec->next().kind, Inbound::Kind::need_more);
}

TEST(CheckedSessionCodec, TheGoodbyeIsTypeTwoWithNothingElse) {
  auto codec = make_checked_codec(1024);
  EXPECT_EQ(hex(codec->goodbye()), "00 00 05 02 00");
  // Type 2 with a payload, or with a checksum that is not the empty payload's,
  // is not the goodbye: an unknown type, as to the plain decoder.
  feed(*codec, from_hex("00 00 05 02 00  00 00 06 02 00 00  00 00 05 02 01  00 00 05 03 00"));
  EXPECT_EQ(codec->next().kind, Inbound::Kind::goodbye);
  for (int i = 0; i < 3; ++i) {
    const auto in = codec->next();
    EXPECT_EQ(in.kind, Inbound::Kind::rejected) << i;
    EXPECT_EQ(in.error, wire::make_error_code(wire::Errc::unknown_type)) << i;
  }
  EXPECT_EQ(codec->next().kind, Inbound::Kind::need_more);
}

TEST(CheckedSessionCodec, RefusesAPayloadOverItsLimit) {
  auto codec = make_checked_codec(4);
  std::array<std::byte, SessionCodec::kMaxHeader> header{};
  std::error_code ec;
  const std::vector<std::byte> five(5);
  codec->frame_header(five, header, ec);
  EXPECT_EQ(ec, wire::make_error_code(wire::Errc::length_over_maximum));
}

TEST(GnbSessionCodec, TakesTheKeepaliveAndPassesWholeFrames) {
  auto codec = gnb::make_gnb_codec();
  EXPECT_EQ(hex(codec->heartbeat()), "00 00 00 00 00 00");
  feed(*codec, from_hex("00 00 00 00 00 00  10 02 00 00 00 04 DE AD BE EF  00 00 00 00 00"));
  EXPECT_EQ(codec->next().kind, Inbound::Kind::heartbeat);
  const auto in = codec->next();
  ASSERT_EQ(in.kind, Inbound::Kind::message);
  EXPECT_EQ(hex(in.message.bytes), "10 02 00 00 00 04 de ad be ef");
  EXPECT_EQ(in.message.id, 0x1002u);  // what the decoder read: nobody parses the header again
  EXPECT_EQ(hex(in.message.body), "de ad be ef");
  // Five zero bytes are not yet a keepalive; the sixth makes one.
  EXPECT_EQ(codec->next().kind, Inbound::Kind::need_more);
  feed(*codec, from_hex("00"));
  EXPECT_EQ(codec->next().kind, Inbound::Kind::heartbeat);
}

TEST(GnbSessionCodec, TypeZeroWithABodyIsStillFatal) {
  auto codec = gnb::make_gnb_codec();
  feed(*codec, from_hex("00 00 00 00 00 01 FF"));
  const auto in = codec->next();
  EXPECT_EQ(in.kind, Inbound::Kind::failed);
  EXPECT_EQ(in.error, wire::make_error_code(wire::Errc::unknown_type));
}

TEST(GnbSessionCodec, TakesTheGoodbyeEvenAByteAtATime) {
  auto codec = gnb::make_gnb_codec();
  EXPECT_EQ(hex(codec->goodbye()), "00 00 00 00 00 01 01");
  // Six bytes could still be a goodbye's start: not fatal yet.
  for (const char* byte : {"00", "00", "00", "00", "00", "01"}) {
    feed(*codec, from_hex(byte));
    EXPECT_EQ(codec->next().kind, Inbound::Kind::need_more);
  }
  feed(*codec, from_hex("01  00 00 00 00 00 00"));
  EXPECT_EQ(codec->next().kind, Inbound::Kind::goodbye);
  EXPECT_EQ(codec->next().kind, Inbound::Kind::heartbeat);
  EXPECT_EQ(codec->next().kind, Inbound::Kind::need_more);
}

TEST(GnbSessionCodec, RefusesToSendWhatIsNotOneValidFrame) {
  auto codec = gnb::make_gnb_codec();
  std::array<std::byte, SessionCodec::kMaxHeader> header{};
  const auto check = [&](const char* frame) {
    std::error_code ec;
    EXPECT_EQ(codec->frame_header(from_hex(frame), header, ec), 0u);
    return ec;
  };
  EXPECT_FALSE(check("10 02 00 00 00 04 DE AD BE EF"));
  EXPECT_EQ(check("10 02 00 00"), wire::make_error_code(wire::Errc::length_below_header));
  EXPECT_EQ(check("77 77 00 00 00 00"), wire::make_error_code(wire::Errc::unknown_type));
  EXPECT_EQ(check("10 02 00 00 00 05 DE AD BE EF"), wire::make_error_code(wire::Errc::length_mismatch));
  EXPECT_EQ(check("10 02 00 00 00 02 DE AD"), wire::make_error_code(wire::Errc::body_too_short));
}

TEST(Backoff, GrowsByTheMultiplierUpToTheMaximumAndResets) {
  Backoff b({100ms, 1000ms, 2.0, 0.0});
  std::vector<long long> delays;
  for (int i = 0; i < 6; ++i) delays.push_back(b.next(0.5).count());
  EXPECT_EQ(delays, (std::vector<long long>{100, 200, 400, 800, 1000, 1000}));
  b.reset();
  EXPECT_EQ(b.next(0.5).count(), 100);
}

TEST(Backoff, JitterStaysWithinItsBand) {
  Backoff low({100ms, 10000ms, 2.0, 0.2}), high({100ms, 10000ms, 2.0, 0.2});
  EXPECT_EQ(low.next(0.0).count(), 80);    // 100 x (1 - 0.2)
  EXPECT_EQ(high.next(0.999).count(), 119);  // just under 100 x (1 + 0.2)
  EXPECT_EQ(low.next(0.0).count(), 160);
}

}  // namespace
}  // namespace volley::net

namespace volley::rpc {
namespace {

using test::from_hex;
using test::hex;

TEST(RpcSessionCodec, TakesTheKeepaliveAndPassesWholeFrames) {
  auto codec = make_rpc_codec(1024);
  EXPECT_EQ(hex(codec->heartbeat()), "00 00 00 00 00 00 00 00 ff ff ff fe");
  const auto bytes = from_hex("00 00 00 00 00 00 00 00 ff ff ff fe  00 00 00 07 00 00 00 02 00 00 00 01 aa bb");
  auto room = codec->prepare();
  std::copy(bytes.begin(), bytes.end(), room.begin());
  codec->commit(bytes.size());
  EXPECT_EQ(codec->next().kind, net::Inbound::Kind::heartbeat);
  const auto in = codec->next();
  ASSERT_EQ(in.kind, net::Inbound::Kind::message);
  EXPECT_EQ(hex(in.message.bytes), "00 00 00 07 00 00 00 02 00 00 00 01 aa bb");
  EXPECT_EQ(in.message.sequence, 7u);
  EXPECT_EQ(in.message.id, 1u);
  EXPECT_EQ(hex(in.message.body), "aa bb");
  EXPECT_EQ(codec->next().kind, net::Inbound::Kind::need_more);
}

TEST(RpcSessionCodec, TakesTheGoodbye) {
  auto codec = make_rpc_codec(1024);
  EXPECT_EQ(hex(codec->goodbye()), "00 00 00 00 00 00 00 00 ff ff ff fd");
  // With a body it is a message like any other (the server answers unknown id).
  const auto bytes = from_hex("00 00 00 00 00 00 00 00 ff ff ff fd  00 00 00 01 00 00 00 01 ff ff ff fd 00");
  auto room = codec->prepare();
  std::copy(bytes.begin(), bytes.end(), room.begin());
  codec->commit(bytes.size());
  EXPECT_EQ(codec->next().kind, net::Inbound::Kind::goodbye);
  EXPECT_EQ(codec->next().kind, net::Inbound::Kind::message);
}

TEST(RpcSessionCodec, RefusesWhatIsNotOneFrameAndFailsOnAHugeSize) {
  auto codec = make_rpc_codec(16);
  std::array<std::byte, net::SessionCodec::kMaxHeader> header{};
  std::error_code ec;
  codec->frame_header(from_hex("00 00 00 01 00 00 00 03 00 00 00 05 01 02"), header, ec);
  EXPECT_EQ(ec, wire::make_error_code(wire::Errc::length_mismatch));
  codec->frame_header(from_hex("00 00 00 01 00 00 00 02 00 00 00 05 01 02"), header, ec);
  EXPECT_FALSE(ec);
  const auto huge = from_hex("00 00 00 01 00 00 10 00 00 00 00 05");
  auto room = codec->prepare();
  std::copy(huge.begin(), huge.end(), room.begin());
  codec->commit(huge.size());
  EXPECT_EQ(codec->next().kind, net::Inbound::Kind::failed);
}

}  // namespace
}  // namespace volley::rpc
