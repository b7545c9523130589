#pragma once
// Test helpers: bytes from string literals and hex dumps for byte-exact checks.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace volley::test {

template <std::size_t N>
std::vector<std::byte> bytes_of(const char (&literal)[N]) {  // keeps embedded NULs
  std::vector<std::byte> out(N - 1);
  for (std::size_t i = 0; i + 1 < N; ++i) out[i] = static_cast<std::byte>(literal[i]);
  return out;
}

inline std::string hex(std::span<const std::byte> data) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (i) out += ' ';
    const auto b = std::to_integer<unsigned>(data[i]);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

}  // namespace volley::test
