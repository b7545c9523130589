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

// "00 0A ff": hex digit pairs, spaces ignored.
inline std::vector<std::byte> from_hex(std::string_view text) {
  const auto digit = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ' ') continue;
    out.push_back(static_cast<std::byte>(digit(text[i]) * 16 + digit(text[i + 1])));
    ++i;
  }
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
