#pragma once
// The ARQ packet format (docs/PROTOCOL.md), the same for all three schemes.
//   data: [conversation u32][type 1 u8][flags u8][sequence u32][length u16][crc32c u32][payload]
//   ack:  [conversation u32][type 2 u8][flags u8][cumulative u32][window u16][sack 16 bytes][crc32c u32]
// The CRC-32C covers the whole packet with its own field taken as zero, so a
// corrupt packet is discarded. Sequence numbers are 32-bit and wrap: compare
// them with seq_before().
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace volley::arq {

inline constexpr std::size_t kDataHeaderSize = 16;
inline constexpr std::size_t kAckSize = 32;
inline constexpr std::size_t kSackBits = 128;  // packets after the cumulative ack a receiver can report
inline constexpr std::uint8_t kFlagFin = 0x01;  // end of stream

// The byte after the conversation id says what a packet is; FEC adds two
// kinds (fec.hpp) to the protocol's two.
enum class PacketType : std::uint8_t { data = 1, ack = 2, repair = 3, report = 4 };
inline constexpr std::size_t kTypeAt = 4;
// What a datagram says it is, by its type byte alone: no size or checksum
// check (decode() and decode_repair()/decode_report() make those), so a
// router can pick the one decoder that applies. Null when it is too short to
// say, or names no type.
constexpr std::optional<PacketType> peek_type(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() <= kTypeAt) return std::nullopt;
  const auto type = static_cast<std::uint8_t>(bytes[kTypeAt]);
  if (type < 1 || type > 4) return std::nullopt;
  return static_cast<PacketType>(type);
}

// RFC 1982 serial number arithmetic: a is before b when b - a is less than 2^31.
constexpr bool seq_before(std::uint32_t a, std::uint32_t b) noexcept { return static_cast<std::int32_t>(a - b) < 0; }

struct DataPacket {
  std::uint32_t conversation = 0;
  std::uint32_t sequence = 0;
  bool fin = false;
  std::span<const std::byte> payload;
};

struct AckPacket {
  std::uint32_t conversation = 0;
  std::uint32_t cumulative = 0;  // the next sequence the receiver waits for
  std::uint16_t window = 0;      // packets it can still take
  std::array<std::uint64_t, 2> sack{};  // bit i: cumulative + 1 + i has arrived

  bool sacked(std::uint32_t seq) const noexcept {
    const std::uint32_t offset = seq - cumulative - 1;
    return offset < kSackBits && ((sack[offset / 64] >> (offset % 64)) & 1u) != 0;
  }
  void set_sacked(std::uint32_t seq) noexcept {
    const std::uint32_t offset = seq - cumulative - 1;
    if (offset < kSackBits) sack[offset / 64] |= std::uint64_t{1} << (offset % 64);
  }
};

// bad_flags: a flag bit this version does not define (data: only end of
// stream; acks: none). Rejected rather than ignored, so every accepted packet
// is one the encoder could have written.
enum class PacketError { none, too_short, bad_checksum, bad_type, bad_length, bad_flags };

void encode_data(const DataPacket& packet, std::vector<std::byte>& out);
void encode_ack(const AckPacket& packet, std::vector<std::byte>& out);

// Which kind a well-formed packet is; checks size and checksum first.
struct Decoded {
  PacketError error = PacketError::none;
  bool is_ack = false;
  DataPacket data;
  AckPacket ack;
};
Decoded decode(std::span<const std::byte> bytes) noexcept;

}  // namespace volley::arq
