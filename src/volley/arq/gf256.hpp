#pragma once
// Arithmetic in GF(2^8) with the polynomial x^8+x^4+x^3+x^2+1 (0x11D, as in
// most Reed-Solomon codes), and the Cauchy-matrix erasure code the FEC layer
// uses. Private to the ARQ library.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace volley::arq::gf256 {

struct Tables {
  std::array<std::uint8_t, 512> exp{};  // doubled, so exp[log a + log b] needs no modulo
  std::array<std::uint8_t, 256> log{};
};

constexpr Tables make_tables() {
  Tables t;
  unsigned x = 1;
  for (unsigned i = 0; i < 255; ++i) {
    t.exp[i] = static_cast<std::uint8_t>(x);
    t.log[x] = static_cast<std::uint8_t>(i);
    x <<= 1;
    if (x & 0x100) x ^= 0x11D;
  }
  for (unsigned i = 255; i < 512; ++i) t.exp[i] = t.exp[i - 255];
  return t;
}

inline constexpr Tables kTables = make_tables();

constexpr std::uint8_t mul(std::uint8_t a, std::uint8_t b) noexcept {
  if (a == 0 || b == 0) return 0;
  return kTables.exp[kTables.log[a] + kTables.log[b]];
}

constexpr std::uint8_t inv(std::uint8_t a) noexcept { return kTables.exp[255 - kTables.log[a]]; }  // a != 0

// Row `row` (0..m-1), column `col` (0..k-1) of the repair rows: 1 / ((k + row) xor col).
// Distinct x = k + row and y = col keep x xor y non-zero and every square
// submatrix invertible, so any k of the k + m rows rebuild the group.
constexpr std::uint8_t cauchy(unsigned k, unsigned row, unsigned col) noexcept {
  return inv(static_cast<std::uint8_t>((k + row) ^ col));
}

// dst += c * src, element-wise (dst no shorter than src).
inline void mul_add(std::span<std::byte> dst, std::span<const std::byte> src, std::uint8_t c) noexcept {
  if (c == 0) return;
  std::array<std::uint8_t, 256> row;
  for (unsigned v = 0; v < 256; ++v) row[v] = mul(c, static_cast<std::uint8_t>(v));
  for (std::size_t i = 0; i < src.size(); ++i) dst[i] ^= std::byte{row[std::to_integer<std::uint8_t>(src[i])]};
}

inline void scale(std::span<std::byte> v, std::uint8_t c) noexcept {
  std::array<std::uint8_t, 256> row;
  for (unsigned x = 0; x < 256; ++x) row[x] = mul(c, static_cast<std::uint8_t>(x));
  for (auto& b : v) b = std::byte{row[std::to_integer<std::uint8_t>(b)]};
}

// Solves A x = b for x by Gauss-Jordan elimination, where A is n x n (row-major)
// and each b[i] a symbol; b becomes x. False if A is singular (never for Cauchy
// submatrices; checked all the same).
inline bool solve(std::vector<std::uint8_t>& a, std::vector<std::vector<std::byte>>& b) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    while (pivot < n && a[pivot * n + col] == 0) ++pivot;
    if (pivot == n) return false;
    if (pivot != col) {
      for (std::size_t j = 0; j < n; ++j) std::swap(a[pivot * n + j], a[col * n + j]);
      std::swap(b[pivot], b[col]);
    }
    const std::uint8_t f = inv(a[col * n + col]);
    for (std::size_t j = 0; j < n; ++j) a[col * n + j] = mul(a[col * n + j], f);
    scale(b[col], f);
    for (std::size_t r = 0; r < n; ++r) {
      const std::uint8_t c = a[r * n + col];
      if (r == col || c == 0) continue;
      for (std::size_t j = 0; j < n; ++j) a[r * n + j] ^= mul(c, a[col * n + j]);
      mul_add(b[r], b[col], c);
    }
  }
  return true;
}

}  // namespace volley::arq::gf256
