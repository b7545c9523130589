#pragma once
// CRC-32C (Castagnoli, as in iSCSI and SCTP): the checksum carried by
// ack-with-checksum replies. Uses the SSE4.2 instruction where the CPU has it.
#include <cstddef>
#include <cstdint>
#include <span>

namespace volley::wire {

// `crc` continues a previous call's result, so a message can be summed in pieces.
std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

// The portable table-driven path, exposed so tests can compare both paths.
std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

}  // namespace volley::wire
