#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <volley/net/detail/write_queue.hpp>

using volley::net::detail::WriteQueue;

namespace {
std::span<const std::byte> as_bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

std::string flatten(std::span<const std::span<const std::byte>> segments) {
  std::string out;
  for (auto s : segments) out.append(reinterpret_cast<const char*>(s.data()), s.size());
  return out;
}
}  // namespace

TEST(WriteQueue, CoalescesSmallCopiesIntoOneSegment) {
  WriteQueue q;
  const std::string a = "hello ", b = "world";
  q.append(as_bytes(a));
  q.append(as_bytes(b));
  EXPECT_EQ(q.queued_bytes(), 11u);
  auto batch = q.start_batch();
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(flatten(batch), "hello world");
  EXPECT_TRUE(q.in_flight());
  EXPECT_FALSE(q.has_pending());
  EXPECT_EQ(q.finish_batch(), 11u);
  EXPECT_EQ(q.queued_bytes(), 0u);
}

TEST(WriteQueue, BorrowedBuffersKeepTheirPlaceInOrder) {
  WriteQueue q;
  const std::string a = "A", big = std::string(1000, 'B'), c = "C";
  q.append(as_bytes(a));
  q.append_borrowed(as_bytes(big));
  q.append(as_bytes(c));
  auto batch = q.start_batch();
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[1].data(), reinterpret_cast<const std::byte*>(big.data()));  // not copied
  EXPECT_EQ(flatten(batch), "A" + big + "C");
}

TEST(WriteQueue, SendsDuringAFlightGoToTheNextBatch) {
  WriteQueue q;
  const std::string first = "first", second = "second";
  q.append(as_bytes(first));
  auto batch = q.start_batch();
  q.append(as_bytes(second));
  EXPECT_EQ(flatten(batch), "first");
  EXPECT_EQ(q.queued_bytes(), 11u);
  EXPECT_EQ(q.finish_batch(), 5u);
  ASSERT_TRUE(q.has_pending());
  EXPECT_EQ(flatten(q.start_batch()), "second");
}

TEST(WriteQueue, LargeMessagesAndChunkBoundaries) {
  WriteQueue q;
  std::string expected;
  for (int i = 0; i < 50; ++i) {
    const std::string msg(static_cast<std::size_t>(7000 + i), static_cast<char>('a' + i % 26));
    q.append(as_bytes(msg));
    expected += msg;
  }
  const std::string huge(WriteQueue::kChunkSize * 2 + 3, 'z');
  q.append(as_bytes(huge));
  expected += huge;
  EXPECT_EQ(q.queued_bytes(), expected.size());
  EXPECT_EQ(flatten(q.start_batch()), expected);
  EXPECT_EQ(q.finish_batch(), expected.size());
  // Pooled chunks are reused: the next batch holds the same content rules.
  q.append(as_bytes(expected.substr(0, 10)));
  EXPECT_EQ(flatten(q.start_batch()), expected.substr(0, 10));
  q.clear();
  EXPECT_EQ(q.queued_bytes(), 0u);
}

TEST(WriteQueue, SpaceWrittenInPlaceJoinsTheSegmentAndAnUnusedTailIsGivenBack) {
  WriteQueue q;
  const std::string a = "head:";
  q.append(as_bytes(a));
  std::span<std::byte> room = q.append_space(16);
  ASSERT_EQ(room.size(), 16u);
  const std::string body = "in place";
  std::memcpy(room.data(), body.data(), body.size());
  q.give_back(16 - body.size());
  EXPECT_EQ(q.queued_bytes(), a.size() + body.size());
  q.append(as_bytes(std::string(";tail")));  // lands right behind what was kept
  const auto batch = q.start_batch();
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(flatten(batch), "head:in place;tail");
  EXPECT_EQ(q.finish_batch(), 18u);
}

TEST(WriteQueue, SpaceGivenBackWholeLeavesNothingBehind) {
  WriteQueue q;
  q.append_space(100);
  q.give_back(100);
  EXPECT_EQ(q.queued_bytes(), 0u);
  q.append_space(WriteQueue::kChunkSize * 3);  // a chunk of its own
  q.give_back(WriteQueue::kChunkSize * 3);
  EXPECT_EQ(q.queued_bytes(), 0u);
  for (const auto& segment : q.start_batch()) EXPECT_FALSE(segment.empty()) << "an empty segment was left queued";
  EXPECT_EQ(q.finish_batch(), 0u);
}

TEST(WriteQueue, ALargeMessageBuiltInPlaceIsOneSegment) {
  WriteQueue q;
  q.append(as_bytes(std::string("x")));
  const std::size_t size = 1024 * 1024 + 5;
  std::span<std::byte> room = q.append_space(size + 11);
  std::fill(room.begin(), room.begin() + static_cast<std::ptrdiff_t>(size), std::byte{'L'});
  q.give_back(11);
  const auto batch = q.start_batch();
  ASSERT_EQ(batch.size(), 2u) << "the small copy, then the large frame whole";
  EXPECT_EQ(batch[1].size(), size);
  EXPECT_EQ(q.finish_batch(), size + 1);
}
