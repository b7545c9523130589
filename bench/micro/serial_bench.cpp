// Reflection serialization against hand-written code for the same structs:
// encode + decode of Ping and of a Request with a 50-character string. The
// hand-written side does the same checks (bounds, trailing bytes), so the
// difference is what reflection costs.
#include <benchmark/benchmark.h>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include <volley/serial/binary.hpp>
#include "benchmark_messages.hpp"

namespace serial = volley::serial;
namespace messages = volley::benchmarks;

namespace {

inline void put(std::byte*& p, std::uint64_t v, int width) {
  for (int i = width - 1; i >= 0; --i) *p++ = static_cast<std::byte>(v >> (8 * i));
}
inline std::uint64_t get(const std::byte*& p, int width) {
  std::uint64_t v = 0;
  for (int i = 0; i < width; ++i) v = (v << 8) | std::to_integer<std::uint64_t>(*p++);
  return v;
}

std::size_t hand_encode(const messages::Ping& m, std::span<std::byte> out) {
  if (out.size() < 8) return 0;
  std::byte* p = out.data();
  put(p, static_cast<std::uint64_t>(m.t), 8);
  return 8;
}

bool hand_decode(std::span<const std::byte> in, messages::Ping& m) {
  if (in.size() != 8) return false;
  const std::byte* p = in.data();
  m.t = static_cast<std::int64_t>(get(p, 8));
  return true;
}

std::size_t hand_encode(const messages::Request& m, std::span<std::byte> out) {
  const std::size_t n = 4 + m.text.size() + 8 + 1 + 2 + 4;
  if (out.size() < n) return 0;
  std::byte* p = out.data();
  put(p, m.text.size(), 4);
  std::memcpy(p, m.text.data(), m.text.size());
  p += m.text.size();
  put(p, std::bit_cast<std::uint64_t>(m.value), 8);
  put(p, static_cast<std::uint8_t>(m.small), 1);
  put(p, static_cast<std::uint16_t>(m.medium), 2);
  put(p, static_cast<std::uint32_t>(m.large), 4);
  return n;
}

bool hand_decode(std::span<const std::byte> in, messages::Request& m) {
  const std::byte* p = in.data();
  const std::byte* end = p + in.size();
  if (end - p < 4) return false;
  const std::size_t len = get(p, 4);
  if (static_cast<std::size_t>(end - p) < len) return false;
  m.text.assign(reinterpret_cast<const char*>(p), len);
  p += len;
  if (end - p != 15) return false;  // the fixed fields, and no trailing bytes
  m.value = std::bit_cast<double>(get(p, 8));
  m.small = static_cast<std::int8_t>(get(p, 1));
  m.medium = static_cast<std::int16_t>(get(p, 2));
  m.large = static_cast<std::int32_t>(get(p, 4));
  return true;
}

template <class T>
void reflect_round_trip(benchmark::State& state, const T& value) {
  std::vector<std::byte> buffer(4096);
  T out{};
  std::error_code ec;
  T in = value;
  for (auto _ : state) {
    benchmark::DoNotOptimize(in);  // an input the compiler cannot fold
    const std::size_t n = serial::encode(in, buffer, ec);
    const bool ok = serial::decode(std::span(buffer).first(n), out, ec);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(out);
  }
}

template <class T>
void hand_round_trip(benchmark::State& state, const T& value) {
  std::vector<std::byte> buffer(4096);
  T out{};
  T in = value;
  for (auto _ : state) {
    benchmark::DoNotOptimize(in);
    const std::size_t n = hand_encode(in, buffer);
    const bool ok = hand_decode(std::span(buffer).first(n), out);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(out);
  }
}

const messages::Ping kPing{123456789};
const messages::Request kRequest{std::string(50, 'r'), 3.25, 7, 1234, 987654};

void BM_PingReflection(benchmark::State& s) { reflect_round_trip(s, kPing); }
void BM_PingHandWritten(benchmark::State& s) { hand_round_trip(s, kPing); }
void BM_Request50Reflection(benchmark::State& s) { reflect_round_trip(s, kRequest); }
void BM_Request50HandWritten(benchmark::State& s) { hand_round_trip(s, kRequest); }
BENCHMARK(BM_PingReflection);
BENCHMARK(BM_PingHandWritten);
BENCHMARK(BM_Request50Reflection);
BENCHMARK(BM_Request50HandWritten);

}  // namespace

BENCHMARK_MAIN();
