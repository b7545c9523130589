// The decoders' buffer holds memory in proportion to the traffic, not to the
// largest frame a protocol allows (issue: 253 KiB per idle gNB connection,
// 32 MiB reserved per RPC connection).
#include <gtest/gtest.h>

#include <vector>

#include <volley/rpc/frame.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/checked.hpp>
#include <volley/wire/detail/stream_buffer.hpp>
#include <volley/gnb/decoder.hpp>

using volley::wire::detail::StreamBuffer;

namespace {

// `count` reads of `n` bytes (as a socket would deliver them), each consumed whole.
void small_reads(StreamBuffer& b, int count, std::size_t n) {
  for (int i = 0; i < count; ++i) {
    const auto room = b.prepare();
    ASSERT_GE(room.size(), n);
    b.commit(n);
    b.consume(n);
  }
}

}  // namespace

TEST(StreamBuffer, HoldsNothingBeforeTheFirstReadAndTheBaseForSmallMessages) {
  StreamBuffer b(16 * 1024, 256 * 1024);
  EXPECT_EQ(b.capacity(), 0u);
  small_reads(b, 1000, 100);
  EXPECT_EQ(b.capacity(), 16u * 1024);
}

TEST(StreamBuffer, ReadsThatFillItDoubleTheReadSizeUpToTheLimitAndQuietReadsHalveIt) {
  StreamBuffer b(16 * 1024, 256 * 1024);
  for (int i = 0; i < 10; ++i) {  // a sender far ahead: every read fills what it was given
    const auto room = b.prepare();
    b.commit(room.size());
    b.consume(b.size());
  }
  EXPECT_EQ(b.read_size(), 256u * 1024);
  EXPECT_EQ(b.prepare().size(), 256u * 1024);
  small_reads(b, 64 * 5, 10);  // then small messages: halves every 64 reads down to the base
  EXPECT_EQ(b.read_size(), 16u * 1024);
  b.prepare();
  EXPECT_EQ(b.capacity(), 16u * 1024);
}

TEST(StreamBuffer, ALargeFrameIsHeldWholeAndItsMemoryGoesBackAfterIt) {
  StreamBuffer b(16 * 1024, 256 * 1024);
  const std::size_t frame = 1024 * 1024;
  std::size_t got = 0;
  while (got < frame) {  // the header told the decoder the frame's size
    const auto room = b.prepare(frame);
    ASSERT_GE(room.size() + b.size(), frame);
    const std::size_t n = std::min<std::size_t>(room.size(), std::min<std::size_t>(60000, frame - got));
    b.commit(n);
    got += n;
  }
  EXPECT_EQ(b.size(), frame);  // whole, in one piece
  EXPECT_GE(b.capacity(), frame);
  b.consume(frame);
  small_reads(b, 70, 50);
  EXPECT_LE(b.capacity(), 256u * 1024);
}

TEST(StreamBuffer, AStreamOfLargeFramesKeepsItsBufferInsteadOfAllocatingPerFrame) {
  StreamBuffer b(16 * 1024, 256 * 1024);
  const std::size_t frame = 1024 * 1024;
  const std::byte* first = nullptr;
  for (int f = 0; f < 20; ++f) {
    for (std::size_t got = 0; got < frame;) {
      const auto room = b.prepare(frame);
      if (f == 1 && got == 0) first = room.data();
      if (f > 1 && got == 0) {
        EXPECT_EQ(room.data(), first);  // the same memory for every frame
      }
      const std::size_t n = std::min(room.size(), frame - got);
      b.commit(n);
      got += n;
    }
    b.consume(frame);
  }
}

TEST(StreamBuffer, APartialFrameSurvivesGrowthAndCompaction) {
  StreamBuffer b(64, 1024);
  std::vector<std::byte> sent;
  for (int i = 0; i < 5000; ++i) sent.push_back(static_cast<std::byte>(i * 7));
  std::vector<std::byte> got;
  std::size_t at = 0;
  for (std::size_t step = 1; at < sent.size(); step = step % 97 + 13) {
    const auto room = b.prepare(step % 3 == 0 ? b.size() + 500 : 0);
    const std::size_t n = std::min({room.size(), step, sent.size() - at});
    std::copy_n(sent.begin() + static_cast<std::ptrdiff_t>(at), n, room.begin());
    b.commit(n);
    at += n;
    const std::size_t take = b.size() / 2;  // a decoder leaving part of a frame behind
    got.insert(got.end(), b.readable().begin(), b.readable().begin() + static_cast<std::ptrdiff_t>(take));
    b.consume(take);
  }
  got.insert(got.end(), b.readable().begin(), b.readable().end());
  EXPECT_EQ(got, sent);
}

// A header that lies about its length costs nothing: the decoders grow only
// for a frame within their maximum.
TEST(StreamBuffer, LyingLengthsDoNotGrowTheDecoders) {
  using namespace volley;
  {
    gnb::FrameDecoder d;
    std::vector<std::byte> header(gnb::kHeaderSize);
    wire::store_u16_be(header.data(), 0x8001);
    wire::store_u32_be(header.data() + 2, 0xFFFFFFF0u);
    d.feed(header);
    EXPECT_EQ(d.next().status, gnb::DecodeStatus::failed);
    d.prepare();
    EXPECT_LE(d.capacity(), StreamBuffer::kDefaultBase);
  }
  {
    wire::checked::FrameDecoder d(4096);
    const std::array<std::byte, 5> header{std::byte{0xff}, std::byte{0xff}, std::byte{0xff}, std::byte{1}, std::byte{0}};
    d.feed(header);
    EXPECT_EQ(d.next().status, wire::checked::DecodeStatus::rejected);
    std::vector<std::byte> junk(100000, std::byte{7});
    for (std::size_t at = 0; at < junk.size();) {
      at += d.feed(std::span(junk).subspan(at));
      d.next();
    }
    EXPECT_LE(d.capacity(), StreamBuffer::kDefaultReadLimit);
  }
  {
    rpc::FrameDecoder d(1024);
    auto room = d.prepare();
    std::array<std::byte, rpc::kHeaderSize> header{};
    rpc::write_header(header.data(), 1, 0x7FFFFFFF, 5);
    std::copy(header.begin(), header.end(), room.begin());
    d.commit(header.size());
    rpc::Frame f{};
    EXPECT_EQ(d.next(f), rpc::FrameDecoder::Status::failed);
    d.prepare();
    EXPECT_LE(d.capacity(), StreamBuffer::kDefaultBase);
  }
}
