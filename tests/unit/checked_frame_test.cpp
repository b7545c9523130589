#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/checked.hpp>
#include <volley/wire/error.hpp>

#include "bytes.hpp"

using namespace volley::wire;
using namespace volley::wire::checked;
using volley::test::bytes_of;
using volley::test::hex;

namespace {

std::vector<std::byte> frame(FrameType type, std::span<const std::byte> payload) {
  std::vector<std::byte> out(kHeaderSize + payload.size());
  encode(type, payload, out);
  return out;
}

struct Event {
  DecodeStatus status;
  std::string payload;
  std::error_code error;
  FrameType type = FrameType::message;  // of a frame; message for the rest
  bool operator==(const Event&) const = default;
};

std::string text_of(std::span<const std::byte> payload) {
  return {reinterpret_cast<const char*>(payload.data()), payload.size()};
}

// `take_frame_first`: as a session does, take_frame() before each next().
std::vector<Event> decode_chunked(std::span<const std::byte> stream, std::size_t chunk,
                                  std::size_t max_frame = kDefaultMaxFrame, bool take_frame_first = false) {
  FrameDecoder d(max_frame);
  std::vector<Event> events;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    pos += d.feed(stream.subspan(pos, std::min(chunk, stream.size() - pos)));
    for (;;) {
      if (take_frame_first) {
        if (const auto f = d.take_frame()) {
          events.push_back({DecodeStatus::frame, text_of(f->payload), {}, f->type});
          continue;
        }
      }
      const DecodeResult r = d.next();
      if (r.status == DecodeStatus::need_more) break;
      events.push_back({r.status, text_of(r.frame.payload), r.error,
                        r.status == DecodeStatus::frame ? r.frame.type : FrameType::message});
    }
  }
  return events;
}

}  // namespace

TEST(CheckedFrame, TheSeedsExamplesByteExact) {
  EXPECT_EQ(hex(frame(FrameType::message, bytes_of("hi"))), "00 00 07 01 01 68 69");
  EXPECT_EQ(hex(heartbeat_frame()), "00 00 05 00 00");
  EXPECT_EQ(hex(frame(FrameType::message, {})), "00 00 05 01 00");
  EXPECT_EQ(hex(frame(FrameType::message, bytes_of("closeme"))), "00 00 0c 01 7e 63 6c 6f 73 65 6d 65");
  const auto events = decode_chunked(bytes_of("\x00\x00\x07\x01\x01hi\x00\x00\x05\x00\x00\x00\x00\x0c\x01\x7e" "closeme"), 100);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], (Event{DecodeStatus::frame, "hi", {}}));
  EXPECT_EQ(events[1], (Event{DecodeStatus::frame, "", {}, FrameType::heartbeat}));
  EXPECT_EQ(events[2], (Event{DecodeStatus::frame, "closeme", {}}));
}

TEST(CheckedFrame, ErrorsAreReportedAndTheStreamStaysInStep) {
  std::vector<std::byte> s;
  auto add = [&](std::vector<std::byte> f) { s.insert(s.end(), f.begin(), f.end()); };
  add(frame(FrameType::message, bytes_of("one")));
  auto bad = frame(FrameType::message, bytes_of("bad sum"));
  bad[4] ^= std::byte{0x55};
  add(bad);
  add(frame(FrameType::message, bytes_of("two")));
  auto unknown = frame(FrameType::message, bytes_of("??"));
  unknown[3] = std::byte{7};
  add(unknown);
  add(bytes_of("\x00\x00\x03\x01\x00"));  // a length under the header: the seed's server wedged here
  add(frame(FrameType::message, bytes_of("three")));
  const std::vector<Event> expected{{DecodeStatus::frame, "one", {}},
                                    {DecodeStatus::rejected, "bad sum", volley::wire::Errc::bad_checksum},
                                    {DecodeStatus::frame, "two", {}},
                                    {DecodeStatus::rejected, "??", volley::wire::Errc::unknown_type},
                                    {DecodeStatus::rejected, "", volley::wire::Errc::length_below_header},
                                    {DecodeStatus::frame, "three", {}}};
  EXPECT_EQ(decode_chunked(s, s.size()), expected);
  for (std::size_t chunk = 1; chunk <= s.size(); ++chunk) ASSERT_EQ(decode_chunked(s, chunk), expected) << chunk;
}

// take_frame() is next()'s fast path: it takes exactly the frames next() would
// hand out as frames, and leaves the rest (partial, rejected, skipped) to next().
TEST(CheckedFrame, TakeFrameAgreesWithNextOnEveryKindOfFrameAndSplit) {
  std::vector<std::byte> s;
  auto add = [&](std::vector<std::byte> f) { s.insert(s.end(), f.begin(), f.end()); };
  for (int i = 0; i < 50; ++i) {
    add(frame(FrameType::message, std::vector<std::byte>(static_cast<std::size_t>(i * 7 % 300), std::byte(i))));
    const auto heartbeat = heartbeat_frame();
    add({heartbeat.begin(), heartbeat.end()});
    switch (i % 5) {
      case 0: {
        auto bad = frame(FrameType::message, bytes_of("bad sum"));
        bad[4] ^= std::byte{0x55};
        add(bad);
        break;
      }
      case 1: {
        auto unknown = frame(FrameType::message, bytes_of("??"));
        unknown[3] = std::byte{static_cast<std::uint8_t>(2 + i % 7)};
        add(unknown);
        break;
      }
      case 2: add(bytes_of("\x00\x00\x03\x01\x00")); break;                                  // under the header
      case 3: add(frame(FrameType::message, std::vector<std::byte>(600, std::byte{9}))); break;  // over 512
      default: add(frame(FrameType::message, {})); break;
    }
  }
  const auto whole = decode_chunked(s, s.size(), 512);
  const auto count = [&](auto pred) { return std::count_if(whole.begin(), whole.end(), pred); };
  EXPECT_EQ(count([](const Event& e) { return e.status == DecodeStatus::rejected; }), 40);
  EXPECT_EQ(count([](const Event& e) { return e.type == FrameType::heartbeat; }), 50);
  for (std::size_t chunk : {1u, 4u, 5u, 6u, 7u, 64u, 1000u, 100'000u})
    EXPECT_EQ(decode_chunked(s, chunk, 512, true), whole) << "chunks of " << chunk;
}

TEST(CheckedFrame, AFrameLargerThanTheDecoderHoldsIsSkippedWithoutBuffering) {
  std::vector<std::byte> s = frame(FrameType::message, std::vector<std::byte>(100'000, std::byte{1}));
  const auto after = frame(FrameType::message, bytes_of("after"));
  s.insert(s.end(), after.begin(), after.end());
  for (std::size_t chunk : {7u, 1000u, 70'000u, 200'000u}) {
    const auto events = decode_chunked(s, chunk, 4096);
    ASSERT_EQ(events.size(), 2u) << chunk;
    EXPECT_EQ(events[0].error, volley::wire::Errc::length_over_maximum);
    EXPECT_EQ(events[1], (Event{DecodeStatus::frame, "after", {}}));
  }
  FrameDecoder d(4096);
  d.feed(std::span(s).first(2000));
  EXPECT_EQ(d.next().error, volley::wire::Errc::length_over_maximum);
  EXPECT_EQ(d.next().status, DecodeStatus::need_more);
  EXPECT_GT(d.buffered(), 90'000u);  // what is still to be skipped, not held
}

TEST(CheckedFrame, LargestFrameAndEncodeErrors) {
  std::vector<std::byte> big(kMaxTotalLength - kHeaderSize, std::byte{3});
  std::vector<std::byte> out(kMaxTotalLength);
  EXPECT_EQ(encode(FrameType::message, big, out), kMaxTotalLength);
  EXPECT_EQ(hex(std::span(out).first(3)), "ff ff ff");
  big.push_back(std::byte{0});
  std::error_code ec;
  EXPECT_EQ(encode(FrameType::message, big, out, ec), 0u);
  EXPECT_EQ(ec, volley::wire::Errc::length_over_maximum);
  std::array<std::byte, 4> small{};
  EXPECT_THROW(encode(FrameType::heartbeat, {}, small), std::system_error);
}

TEST(CheckedFrame, ChecksumIsTheXorOfEveryByteAtEveryLengthAndAlignment) {
  std::vector<std::byte> data(1024 + 8);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte{static_cast<unsigned char>(i * 167 + 13)};
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t length = 0; length <= 1024; length += (length < 80 ? 1 : 61)) {
      const std::span<const std::byte> slice(data.data() + offset, length);
      std::uint8_t expected = 0;
      for (std::byte b : slice) expected ^= std::to_integer<std::uint8_t>(b);
      ASSERT_EQ(xor_checksum(slice), expected) << "offset " << offset << " length " << length;
    }
  }
}

TEST(CheckedFrame, CopyWithXorCopiesExactlyAndAgreesWithTheChecksumAtEveryLengthAndAlignment) {
  std::vector<std::byte> data(1024 + 8);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte{static_cast<unsigned char>(i * 131 + 7)};
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t length = 0; length <= 1024; length += (length < 80 ? 1 : 61)) {
      const std::span<const std::byte> slice(data.data() + offset, length);
      // Guard bytes on both sides of the destination: nothing outside it is written.
      std::vector<std::byte> out(length + 2 + 8, std::byte{0xEE});
      std::byte* to = out.data() + 1 + (7 - offset);
      ASSERT_EQ(copy_with_xor(slice, to), xor_checksum(slice)) << "offset " << offset << " length " << length;
      ASSERT_TRUE(std::equal(slice.begin(), slice.end(), to)) << "offset " << offset << " length " << length;
      ASSERT_EQ(to[-1], std::byte{0xEE});
      ASSERT_EQ(to[length], std::byte{0xEE});
    }
  }
}
