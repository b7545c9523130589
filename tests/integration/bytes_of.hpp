#pragma once
// Text as the bytes a test sends (an HTTP head, a frame written out by hand).
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace volley::test {

inline std::vector<std::byte> bytes_of(std::string_view text) {
  const auto b = std::as_bytes(std::span(text.data(), text.size()));
  return {b.begin(), b.end()};
}

}  // namespace volley::test
