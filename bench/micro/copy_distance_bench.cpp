// memcpy of a TLS record's 16 KiB at different distances between destination
// and source, modulo a 4 KiB page. glibc 2.36 (Debian 12) copies this size
// with `rep movsb`, which some AMD CPUs run 20-30 times slower when the
// destination lies 1-31 bytes past the source modulo 4 KiB (about 3 GB/s
// instead of 60-90 on the 2-core EPYC VM, 2026-11-29). OpenSSL copies every
// record in and out of its buffers, so a TLS server's CPU per message moves
// with where the allocator happened to put them. BENCHMARKS.md says how to
// check a machine with this and what to set where it shows.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace {

constexpr std::size_t kRecord = 16 * 1024;
constexpr std::size_t kPage = 4096;

void BM_CopyRecord(benchmark::State& state) {
  const auto distance = static_cast<std::size_t>(state.range(0));
  // Both page-aligned, then offset: the source 8 bytes in (where OpenSSL puts
  // a record's payload), the destination `distance` bytes past that.
  auto free_page = [](std::byte* p) { std::free(p); };
  std::unique_ptr<std::byte, decltype(free_page)> from(static_cast<std::byte*>(std::aligned_alloc(kPage, 8 * kPage)), free_page);
  std::unique_ptr<std::byte, decltype(free_page)> to(static_cast<std::byte*>(std::aligned_alloc(kPage, 8 * kPage)), free_page);
  if (!from || !to) {
    state.SkipWithError("aligned_alloc failed");
    return;
  }
  std::memset(from.get(), 1, 8 * kPage);
  std::memset(to.get(), 2, 8 * kPage);
  std::byte* src = from.get() + 8;
  std::byte* dst = to.get() + 8 + distance;
  for (auto _ : state) {
    std::memcpy(dst, src, kRecord);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kRecord));
}
BENCHMARK(BM_CopyRecord)->Arg(0)->Arg(8)->Arg(24)->Arg(32)->Arg(40)->Arg(200)->Arg(1000)->Arg(4088);

}  // namespace

BENCHMARK_MAIN();
