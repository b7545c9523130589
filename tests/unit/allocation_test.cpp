// "No allocation per message", checked: this binary replaces the global
// operator new with one that counts, then runs the per-message paths.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <vector>

#include <volley/dispatch/dispatcher.hpp>
#include <volley/gnb/dispatch_protocol.hpp>
#include <volley/gnb/views.hpp>
#include <volley/net/detail/write_queue.hpp>
#include <volley/serial/binary.hpp>
#include <volley/gnb/decoder.hpp>

#include "benchmark_messages.hpp"
#include "delay_recorder.hpp"
#include "legacy_messages.hpp"

namespace {
thread_local std::size_t g_allocations = 0;
}

// All out of line: inlined into a caller, GCC takes one side for the built-in
// operator and the other for malloc()/free() and warns of a mismatch (-O1 up).
[[gnu::noinline]] void* operator new(std::size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace gnb = volley::gnb;
namespace dispatch = volley::dispatch;
namespace benchmarks = volley::benchmarks;

namespace {

std::vector<std::byte> stream_of(std::size_t frames) {
  std::vector<std::byte> s;
  const std::uint16_t types[] = {0x1001, 0x8001, 0x1002, 0x1003, 0x1004, 0x8001};
  const std::size_t sizes[] = {64, 1200, 16, 12, 16, 0};
  for (std::size_t i = 0; i < frames; ++i) {
    const std::size_t at = s.size();
    s.resize(at + gnb::kHeaderSize + sizes[i % 6], std::byte{1});
    gnb::write_header(s.data() + at, types[i % 6], static_cast<std::uint32_t>(sizes[i % 6]));
  }
  return s;
}

struct Sum {
  std::uint64_t total = 0;
  void operator()(const gnb::ControlView& v) { total += v.transaction_id; }
  void operator()(const gnb::AckView& v) { total += v.transaction_id; }
  void operator()(const gnb::NackView& v) { total += v.cause; }
  void operator()(const gnb::AckChecksumView& v) { total += v.checksum; }
  void operator()(const gnb::DataView& v) { total += v.body.size(); }
};

// Decodes `stream` in 4 KiB reads, calling `each` per frame; returns allocations made.
template <class Each>
std::size_t allocations_while_decoding(gnb::FrameDecoder& decoder, const std::vector<std::byte>& stream, Each each) {
  const std::size_t before = g_allocations;
  std::size_t pos = 0, frames = 0;
  while (pos < stream.size()) {
    pos += decoder.feed(std::span(stream).subspan(pos, std::min<std::size_t>(4096, stream.size() - pos)));
    for (auto r = decoder.next(); r.status == gnb::DecodeStatus::frame; r = decoder.next()) {
      each(r.frame);
      ++frames;
    }
  }
  EXPECT_EQ(frames, 6000u);
  return g_allocations - before;
}

}  // namespace

TEST(Allocations, DecodingAndVariantDispatchAllocateNothingPerMessage) {
  const auto stream = stream_of(6000);
  gnb::FrameDecoder decoder;
  Sum sum;
  // The first pass sizes the decoder's buffer to the traffic (a few
  // allocations as the read size doubles); after that, nothing.
  EXPECT_LE(allocations_while_decoding(decoder, stream, [&](const gnb::Frame& f) { gnb::dispatch(f, sum); }), 8u);
  EXPECT_EQ(allocations_while_decoding(decoder, stream, [&](const gnb::Frame& f) { gnb::dispatch(f, sum); }), 0u);
  EXPECT_GT(sum.total, 0u);
}

TEST(Allocations, TheLegacyPathAllocatesPerMessageSoThisTestCanTell) {
  const auto stream = stream_of(6000);
  gnb::FrameDecoder decoder;
  Sum sum;
  const std::size_t n = allocations_while_decoding(decoder, stream, [&](const gnb::Frame& f) {
    benchmarks::legacy::dispatch(*benchmarks::legacy::make_message(f), sum);
  });
  EXPECT_GE(n, 6000u);
}

TEST(Allocations, WriteQueueReusesItsChunksInSteadyState) {
  volley::net::detail::WriteQueue q;
  const std::array<std::byte, 10> reply{};
  auto round = [&] {
    for (int i = 0; i < 5000; ++i) q.append(reply);  // 50 KB: fits one pooled chunk
    q.start_batch();
    q.finish_batch();
  };
  round();  // warms the pool and the segment vectors
  round();
  const std::size_t before = g_allocations;
  for (int r = 0; r < 10; ++r) round();
  EXPECT_EQ(g_allocations - before, 0u);
}

TEST(Allocations, DecodingIntoAnExistingValueReusesItsStrings) {
  const volley::benchmarks::Request request{std::string(100, 'q'), 2.5, 1, 2, 3};
  std::vector<std::byte> bytes;
  volley::serial::encode_append(request, bytes);
  volley::benchmarks::Request out{};
  std::error_code ec;
  ASSERT_TRUE(volley::serial::decode(bytes, out, ec));  // the first decode sizes the string
  const std::size_t before = g_allocations;
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(volley::serial::decode(bytes, out, ec));
  EXPECT_EQ(g_allocations - before, 0u);
  EXPECT_EQ(out, request);
  std::array<std::byte, 256> buffer{};
  const std::size_t again = g_allocations;
  for (int i = 0; i < 1000; ++i) ASSERT_GT(volley::serial::encode(request, buffer, ec), 0u);
  EXPECT_EQ(g_allocations - again, 0u);  // encoding into a caller's buffer never allocates
}

TEST(Allocations, AWarmDispatcherAllocatesNothingPerMessage) {
  // gNB frames to their views, and a request with a string decoded by serial
  // into the instance the dispatcher keeps for its handler.
  dispatch::Dispatcher<gnb::GnbProtocol> frames;
  std::uint64_t total = 0;
  frames.on<gnb::ControlView>(0x1001, [&](const gnb::ControlView& v) { total += v.transaction_id; })
      .on<gnb::DataView>(0x8001, [&](const gnb::DataView& v) { total += v.body.size(); });
  const auto stream = stream_of(6000);
  std::vector<std::span<const std::byte>> messages;
  for (std::size_t at = 0; at < stream.size();) {
    const std::size_t size = gnb::kHeaderSize + volley::wire::load_u32_be(stream.data() + at + 2);
    messages.push_back(std::span(stream).subspan(at, size));
    at += size;
  }
  dispatch::Dispatcher<dispatch::LeadingId<std::uint8_t>> requests;
  requests.on<benchmarks::Request>(1, [&](const benchmarks::Request& r) { total += r.text.size(); });
  std::vector<std::byte> request{std::byte{1}};
  volley::serial::encode_append(benchmarks::Request{std::string(100, 'q'), 2.5, 1, 2, 3}, request);
  requests.dispatch(request);  // sizes the kept instance's string

  const std::size_t before = g_allocations;
  for (const auto& m : messages) frames.dispatch(m);
  for (int i = 0; i < 1000; ++i) requests.dispatch(request);
  EXPECT_EQ(g_allocations - before, 0u);
  EXPECT_EQ(frames.stats().handled, 3000u);  // control and both data frames of every six
  EXPECT_EQ(frames.stats().unknown_id, 3000u);
  EXPECT_EQ(requests.stats().handled, 1001u);
  EXPECT_GT(total, 0u);
}

// arq-recv's statistics: a million deliveries, nothing allocated, and the
// figures those deliveries give computed exactly (count, mean, stdev, min,
// max) or within the histogram's 1.6% (median, p99). The receiver used to keep
// every delivery for its report, about 25 bytes each, without bound.
TEST(Allocations, DelayStatisticsTakeFixedSpaceHoweverLongTheRun) {
  volley::tools::DelayRecorder recorder;
  constexpr std::int64_t kCount = 1'000'000;
  const auto delay_ns = [](std::int64_t i) { return 50'000 + (i * 7919) % 1'000'000; };  // 0.05 to 1.05 ms
  const std::size_t before = g_allocations;
  for (std::int64_t i = 0; i < kCount; ++i) recorder.record({static_cast<std::uint64_t>(i), i, i + delay_ns(i)});
  EXPECT_EQ(g_allocations - before, 0u);
  std::vector<volley::tools::DeliveryRecord> records;
  for (std::int64_t i = 0; i < kCount; ++i) records.push_back({static_cast<std::uint64_t>(i), i, i + delay_ns(i)});
  const auto want = volley::tools::delay_stats(records);
  const auto got = recorder.stats();
  EXPECT_EQ(got.count, want.count);
  EXPECT_NEAR(got.mean, want.mean, 1e-9);
  EXPECT_NEAR(got.stdev, want.stdev, 1e-9);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_NEAR(got.median, want.median, 0.016 * want.median);
  EXPECT_NEAR(got.p99, want.p99, 0.016 * want.p99);
  // The Prometheus buckets: every delivery is at most 2.5 ms, half of them at most about 0.55 ms.
  EXPECT_EQ(recorder.cumulative().back(), static_cast<std::uint64_t>(kCount));
  EXPECT_NEAR(static_cast<double>(recorder.cumulative()[3]), 0.95 * kCount, 0.01 * kCount);  // <= 1 ms
}
