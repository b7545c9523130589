#pragma once
// The driver the stream-decoder fuzz targets share: the first input byte picks
// a chunk size, the rest is the stream, and decoding it in those chunks must
// give exactly what decoding it in one piece gives.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

// A fingerprint of a decoded payload that reads every byte (so a view past
// its buffer shows under the sanitizers) and tells two payloads apart.
inline std::uint32_t sum_of(std::span<const std::byte> payload) {
  std::uint32_t sum = 0;
  for (std::byte b : payload) sum = sum * 31 + std::to_integer<std::uint32_t>(b);
  return sum;
}

template <class Decode>
int fuzz_chunked_against_whole(const std::uint8_t* data, std::size_t size, std::size_t whole, Decode decode) {
  if (size < 1) return 0;
  const std::size_t chunk = 1 + data[0] % 64;
  const std::span<const std::byte> stream(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  if (decode(stream, chunk) != decode(stream, whole)) std::abort();
  return 0;
}
