#pragma once
// Big-endian (network order) loads and stores on raw bytes. Byte-by-byte so they
// are alignment-safe; compilers fold them into single bswapped moves.
#include <cstddef>
#include <cstdint>

namespace volley::wire {

inline std::uint16_t load_u16_be(const std::byte* p) noexcept {
  return static_cast<std::uint16_t>((std::to_integer<std::uint16_t>(p[0]) << 8) |
                                    std::to_integer<std::uint16_t>(p[1]));
}

inline std::uint32_t load_u24_be(const std::byte* p) noexcept {
  return (std::to_integer<std::uint32_t>(p[0]) << 16) | (std::to_integer<std::uint32_t>(p[1]) << 8) |
         std::to_integer<std::uint32_t>(p[2]);
}

inline std::uint32_t load_u32_be(const std::byte* p) noexcept {
  return (std::to_integer<std::uint32_t>(p[0]) << 24) | (std::to_integer<std::uint32_t>(p[1]) << 16) |
         (std::to_integer<std::uint32_t>(p[2]) << 8) | std::to_integer<std::uint32_t>(p[3]);
}

inline void store_u16_be(std::byte* p, std::uint16_t v) noexcept {
  p[0] = static_cast<std::byte>(v >> 8);
  p[1] = static_cast<std::byte>(v);
}

inline void store_u24_be(std::byte* p, std::uint32_t v) noexcept {
  p[0] = static_cast<std::byte>(v >> 16);
  p[1] = static_cast<std::byte>(v >> 8);
  p[2] = static_cast<std::byte>(v);
}

inline void store_u32_be(std::byte* p, std::uint32_t v) noexcept {
  p[0] = static_cast<std::byte>(v >> 24);
  p[1] = static_cast<std::byte>(v >> 16);
  p[2] = static_cast<std::byte>(v >> 8);
  p[3] = static_cast<std::byte>(v);
}

}  // namespace volley::wire
