#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/error.hpp>
#include <volley/gnb/decoder.hpp>

using namespace volley::wire;
using namespace volley::gnb;

namespace {

void append_frame(std::vector<std::byte>& stream, std::uint16_t type, std::size_t body_len, std::byte fill) {
  const std::size_t at = stream.size();
  stream.resize(at + kHeaderSize + body_len, fill);
  write_header(stream.data() + at, type, static_cast<std::uint32_t>(body_len));
}

struct Event {
  DecodeStatus status;
  std::uint16_t type;
  std::size_t body_len;
  std::byte first;
  std::error_code error;
  bool operator==(const Event&) const = default;
};

// Feeds `stream` in chunks of `chunk` bytes (the last may be shorter), draining after each.
// `take_frame_first`: as a session does, take_frame() before each next().
std::vector<Event> decode_in_chunks(std::span<const std::byte> stream, std::size_t chunk, bool take_frame_first = false) {
  FrameDecoder decoder;
  std::vector<Event> events;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    pos += decoder.feed(stream.subspan(pos, std::min(chunk, stream.size() - pos)));
    for (;;) {
      if (take_frame_first) {
        if (const auto f = decoder.take_frame()) {
          events.push_back({DecodeStatus::frame, static_cast<std::uint16_t>(f->type), f->body.size(),
                            f->body.empty() ? std::byte{0} : f->body[0], {}});
          continue;
        }
      }
      const DecodeResult r = decoder.next();
      if (r.status == DecodeStatus::need_more) break;
      events.push_back({r.status, static_cast<std::uint16_t>(r.status == DecodeStatus::failed ? r.raw_type : static_cast<std::uint16_t>(r.frame.type)),
                        r.frame.body.size(), r.frame.body.empty() ? std::byte{0} : r.frame.body[0], r.error});
      if (r.status == DecodeStatus::failed) return events;
    }
  }
  return events;
}

}  // namespace

TEST(FrameDecoder, DecodesEveryTypeAndHandsOutViews) {
  std::vector<std::byte> s;
  append_frame(s, 0x1001, 64, std::byte{1});
  append_frame(s, 0x1002, 16, std::byte{2});
  append_frame(s, 0x1003, 12, std::byte{3});
  append_frame(s, 0x1004, 16, std::byte{4});
  append_frame(s, 0x8001, 0, std::byte{5});
  append_frame(s, 0x8001, kMaxBodyLength, std::byte{6});
  const auto events = decode_in_chunks(s, s.size());
  ASSERT_EQ(events.size(), 6u);
  const std::uint16_t types[] = {0x1001, 0x1002, 0x1003, 0x1004, 0x8001, 0x8001};
  const std::size_t lens[] = {64, 16, 12, 16, 0, kMaxBodyLength};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(events[i].status, DecodeStatus::frame) << i;
    EXPECT_EQ(events[i].type, types[i]);
    EXPECT_EQ(events[i].body_len, lens[i]);
  }
  EXPECT_EQ(events[5].first, std::byte{6});
}

TEST(FrameDecoder, SplitAtEveryByteOffsetGivesTheSameFrames) {
  std::vector<std::byte> s;
  append_frame(s, 0x1001, 10, std::byte{1});
  append_frame(s, 0x8001, 1200, std::byte{2});
  append_frame(s, 0x1002, 4, std::byte{3});
  append_frame(s, 0x1001, 80, std::byte{9});  // over its limit: rejected, stream stays in sync
  append_frame(s, 0x1004, 8, std::byte{4});
  const auto whole = decode_in_chunks(s, s.size());
  ASSERT_EQ(whole.size(), 5u);
  EXPECT_EQ(whole[3].status, DecodeStatus::rejected);
  EXPECT_EQ(whole[3].error, Errc::body_too_long);

  for (std::size_t split = 1; split < s.size(); ++split) {
    FrameDecoder decoder;
    std::vector<Event> events;
    auto drain = [&] {
      for (DecodeResult r = decoder.next(); r.status != DecodeStatus::need_more; r = decoder.next())
        events.push_back({r.status, static_cast<std::uint16_t>(r.frame.type), r.frame.body.size(),
                          r.frame.body.empty() ? std::byte{0} : r.frame.body[0], r.error});
    };
    ASSERT_EQ(decoder.feed(std::span(s).first(split)), split);
    drain();
    ASSERT_EQ(decoder.feed(std::span(s).subspan(split)), s.size() - split);
    drain();
    ASSERT_EQ(events, whole) << "split at " << split;
    EXPECT_EQ(decoder.buffered(), 0u);
  }
}

TEST(FrameDecoder, OneByteAtATimeAndRandomChunks) {
  std::mt19937 rng(42);
  std::vector<std::byte> s;
  for (int i = 0; i < 300; ++i) {
    const std::uint16_t types[] = {0x1001, 0x1002, 0x1003, 0x1004, 0x8001};
    const std::uint16_t t = types[rng() % 5];
    const std::size_t max = t == 0x8001 ? 3000 : type_info(static_cast<MessageType>(t)).max_body;
    const std::size_t min = type_info(static_cast<MessageType>(t)).min_body;
    append_frame(s, t, min + rng() % (max - min + 1), static_cast<std::byte>(i));
  }
  const auto whole = decode_in_chunks(s, s.size());
  ASSERT_EQ(whole.size(), 300u);
  EXPECT_EQ(decode_in_chunks(s, 1), whole);
  for (std::size_t chunk : {2u, 5u, 6u, 7u, 1000u, 4096u, 70000u}) EXPECT_EQ(decode_in_chunks(s, chunk), whole);
}

// take_frame() is next()'s fast path: it takes exactly the frames next() would
// hand out as frames, and leaves the rest (partial, rejected, failing) to next().
TEST(FrameDecoder, TakeFrameAgreesWithNextOnEveryKindOfFrameAndSplit) {
  std::mt19937 rng(7);
  std::vector<std::byte> s;
  for (int i = 0; i < 400; ++i) {
    const std::uint16_t types[] = {0x1001, 0x1002, 0x1003, 0x1004, 0x8001};
    const std::uint16_t t = types[rng() % 5];
    const std::size_t max = type_info(static_cast<MessageType>(t)).max_body;
    const std::size_t min = type_info(static_cast<MessageType>(t)).min_body;
    // One in eight outside its type's bounds (rejected), where the type has bounds to break.
    std::size_t len = min + rng() % (std::min<std::size_t>(max, 3000) - min + 1);
    if (rng() % 8 == 0 && t != 0x8001) len = rng() % 2 ? max + 1 + rng() % 10 : (min > 0 ? rng() % min : max + 1);
    append_frame(s, t, len, static_cast<std::byte>(i));
  }
  append_frame(s, 0x7777, 4, std::byte{1});  // unknown: fails for good
  const auto whole = decode_in_chunks(s, s.size());
  ASSERT_EQ(whole.back().status, DecodeStatus::failed);
  EXPECT_GT(std::count_if(whole.begin(), whole.end(), [](const Event& e) { return e.status == DecodeStatus::rejected; }), 10);
  for (std::size_t chunk : {1u, 5u, 6u, 7u, 1000u, 4096u, 70000u}) {
    EXPECT_EQ(decode_in_chunks(s, chunk, true), whole) << "chunks of " << chunk;
  }
}

TEST(FrameDecoder, BodyUnderTheTypeMinimumIsRejectedInSync) {
  std::vector<std::byte> s;
  append_frame(s, 0x1001, 2, std::byte{1});
  append_frame(s, 0x1003, 5, std::byte{1});
  append_frame(s, 0x1002, 4, std::byte{7});
  const auto events = decode_in_chunks(s, 3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].status, DecodeStatus::rejected);
  EXPECT_EQ(events[0].error, Errc::body_too_short);
  EXPECT_EQ(events[1].error, Errc::body_too_short);
  EXPECT_EQ(events[2].status, DecodeStatus::frame);
  EXPECT_EQ(events[2].first, std::byte{7});
}

TEST(FrameDecoder, LengthOverTheMaximumFailsForGood) {
  std::vector<std::byte> s;
  append_frame(s, 0x1002, 4, std::byte{1});
  const std::size_t at = s.size();
  s.resize(at + kHeaderSize);
  write_header(s.data() + at, 0x8001, kMaxBodyLength + 1);
  FrameDecoder decoder;
  decoder.feed(s);
  EXPECT_EQ(decoder.next().status, DecodeStatus::frame);
  DecodeResult r = decoder.next();
  EXPECT_EQ(r.status, DecodeStatus::failed);
  EXPECT_EQ(r.error, Errc::length_over_maximum);
  EXPECT_EQ(r.raw_length, kMaxBodyLength + 1);
  EXPECT_TRUE(decoder.failed());
  // Failure is sticky: later bytes are not trusted.
  append_frame(s, 0x1002, 4, std::byte{1});
  decoder.feed(std::span(s).subspan(at + kHeaderSize));
  EXPECT_EQ(decoder.next().status, DecodeStatus::failed);
}

TEST(FrameDecoder, UnknownTypeFails) {
  std::vector<std::byte> s;
  append_frame(s, 0x1005, 4, std::byte{1});
  FrameDecoder decoder;
  decoder.feed(s);
  const DecodeResult r = decoder.next();
  EXPECT_EQ(r.status, DecodeStatus::failed);
  EXPECT_EQ(r.error, Errc::unknown_type);
  EXPECT_EQ(r.raw_type, 0x1005);
}

TEST(FrameDecoder, PartialFrameIsReportedAsBuffered) {
  std::vector<std::byte> s;
  append_frame(s, 0x8001, 100, std::byte{1});
  FrameDecoder decoder;
  decoder.feed(std::span(s).first(50));
  EXPECT_EQ(decoder.next().status, DecodeStatus::need_more);
  EXPECT_EQ(decoder.buffered(), 50u);
}

TEST(FrameDecoder, ZeroCopyPrepareCommitAcrossCompaction) {
  // Many max-size frames through prepare/commit force the partial frame to move.
  std::vector<std::byte> s;
  for (int i = 0; i < 20; ++i) append_frame(s, 0x8001, kMaxBodyLength - static_cast<std::size_t>(i), static_cast<std::byte>(i));
  FrameDecoder decoder;
  std::size_t pos = 0;
  int frames = 0;
  while (pos < s.size()) {
    auto room = decoder.prepare();
    // Room for the rest of the frame at the head, whole (its header is in after the first read).
    if (decoder.buffered() >= kHeaderSize) {
      ASSERT_GE(room.size() + decoder.buffered(), kHeaderSize + kMaxBodyLength - static_cast<std::size_t>(frames));
    }
    ASSERT_GT(room.size(), 0u);
    const std::size_t n = std::min<std::size_t>({room.size(), s.size() - pos, 50000});
    std::copy_n(s.begin() + static_cast<std::ptrdiff_t>(pos), n, room.begin());
    decoder.commit(n);
    pos += n;
    for (DecodeResult r = decoder.next(); r.status != DecodeStatus::need_more; r = decoder.next()) {
      ASSERT_EQ(r.status, DecodeStatus::frame);
      EXPECT_EQ(r.frame.body.size(), kMaxBodyLength - static_cast<std::size_t>(frames));
      EXPECT_EQ(r.frame.body.front(), static_cast<std::byte>(frames));
      EXPECT_EQ(r.frame.body.back(), static_cast<std::byte>(frames));
      ++frames;
    }
  }
  EXPECT_EQ(frames, 20);
}
