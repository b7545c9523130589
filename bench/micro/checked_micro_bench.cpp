// The checked frame's XOR checksum: the library's (a plain byte loop the
// compiler vectorizes) against a hand-written 8-bytes-at-a-time loop, which an
// earlier version used and which measured half as fast; and a whole-frame decode.
#include <benchmark/benchmark.h>

#include <cstring>
#include <span>
#include <vector>

#include <volley/wire/checked.hpp>

namespace checked = volley::wire::checked;

namespace {

std::vector<std::byte> payload(std::size_t n) {
  std::vector<std::byte> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = std::byte{static_cast<unsigned char>(i * 131 + 7)};
  return p;
}

void BM_XorLibrary(benchmark::State& state) {
  const auto p = payload(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(checked::xor_checksum(p));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_XorLibrary)->Arg(64)->Arg(1500)->Arg(65536)->Arg(1 << 20);

// Eight bytes at a time in four scalar accumulators, folded at the end; out of
// line like the library's, so neither is folded into the benchmark loop.
__attribute__((noinline)) std::uint8_t xor_word_wise(std::span<const std::byte> payload) {
  const std::byte* p = payload.data();
  std::size_t n = payload.size();
  std::uint64_t wide[4] = {0, 0, 0, 0};
  for (; n >= sizeof wide; n -= sizeof wide, p += sizeof wide) {
    std::uint64_t w[4];
    std::memcpy(w, p, sizeof w);
    for (int i = 0; i < 4; ++i) wide[i] ^= w[i];
  }
  std::uint64_t x = wide[0] ^ wide[1] ^ wide[2] ^ wide[3];
  x ^= x >> 32;
  x ^= x >> 16;
  x ^= x >> 8;
  auto folded = static_cast<std::uint8_t>(x);
  for (; n > 0; --n, ++p) folded ^= std::to_integer<std::uint8_t>(*p);
  return folded;
}

void BM_XorWordWise(benchmark::State& state) {
  const auto p = payload(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(xor_word_wise(p));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_XorWordWise)->Arg(64)->Arg(1500)->Arg(65536)->Arg(1 << 20);

// Framing a payload for sending: copy into the write buffer and XOR, as two
// passes (memcpy, then xor_checksum) or one (copy_with_xor).
void BM_CopyThenXor(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::byte> in(n, std::byte{0x5A}), out(n);
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), n);
    benchmark::DoNotOptimize(volley::wire::checked::xor_checksum(in));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_CopyThenXor)->Arg(64)->Arg(1500)->Arg(65536)->Arg(1 << 20);

void BM_CopyWithXor(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::byte> in(n, std::byte{0x5A}), out(n);
  for (auto _ : state) {
    benchmark::DoNotOptimize(volley::wire::checked::copy_with_xor(in, out.data()));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_CopyWithXor)->Arg(64)->Arg(1500)->Arg(65536)->Arg(1 << 20);

void BM_DecodeFrame(benchmark::State& state) {
  const auto p = payload(static_cast<std::size_t>(state.range(0)));
  std::vector<std::byte> frame(checked::kHeaderSize + p.size());
  checked::encode(checked::FrameType::message, p, frame);
  checked::FrameDecoder decoder;
  for (auto _ : state) {
    decoder.feed(frame);
    benchmark::DoNotOptimize(decoder.next());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(frame.size()));
}
BENCHMARK(BM_DecodeFrame)->Arg(64)->Arg(1500)->Arg(65536);

}  // namespace

BENCHMARK_MAIN();
