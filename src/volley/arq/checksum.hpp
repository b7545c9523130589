#pragma once
// The CRC-32C every ARQ packet type carries: over the whole packet with the
// checksum's own four bytes taken as zero. Private to the ARQ library.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <volley/wire/crc32c.hpp>

namespace volley::arq::detail {

inline std::uint32_t packet_checksum(std::span<const std::byte> packet, std::size_t crc_at) noexcept {
  static constexpr std::array<std::byte, 4> kZero{};
  std::uint32_t crc = wire::crc32c(packet.first(crc_at));
  crc = wire::crc32c(kZero, crc);
  return wire::crc32c(packet.subspan(crc_at + 4), crc);
}

}  // namespace volley::arq::detail
