#include <volley/arq/packet.hpp>

#include <cstring>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/crc32c.hpp>

#include "checksum.hpp"

namespace volley::arq {

using wire::load_u16_be;
using wire::load_u32_be;
using wire::store_u16_be;
using wire::store_u32_be;

namespace {
constexpr std::size_t kDataCrcAt = 12;
constexpr std::size_t kAckCrcAt = 28;

using detail::packet_checksum;

void store_u64_be(std::byte* p, std::uint64_t v) noexcept {
  store_u32_be(p, static_cast<std::uint32_t>(v >> 32));
  store_u32_be(p + 4, static_cast<std::uint32_t>(v));
}
std::uint64_t load_u64_be(const std::byte* p) noexcept {
  return (std::uint64_t{load_u32_be(p)} << 32) | load_u32_be(p + 4);
}
}  // namespace

void encode_data(const DataPacket& packet, std::vector<std::byte>& out) {
  out.resize(kDataHeaderSize + packet.payload.size());
  std::byte* p = out.data();
  store_u32_be(p, packet.conversation);
  p[kTypeAt] = static_cast<std::byte>(PacketType::data);
  p[5] = std::byte{static_cast<unsigned char>(packet.fin ? kFlagFin : 0)};
  store_u32_be(p + 6, packet.sequence);
  store_u16_be(p + 10, static_cast<std::uint16_t>(packet.payload.size()));
  store_u32_be(p + kDataCrcAt, 0);
  if (!packet.payload.empty()) std::memcpy(p + kDataHeaderSize, packet.payload.data(), packet.payload.size());
  store_u32_be(p + kDataCrcAt, packet_checksum(out, kDataCrcAt));
}

void encode_ack(const AckPacket& packet, std::vector<std::byte>& out) {
  out.resize(kAckSize);
  std::byte* p = out.data();
  store_u32_be(p, packet.conversation);
  p[kTypeAt] = static_cast<std::byte>(PacketType::ack);
  p[5] = std::byte{0};
  store_u32_be(p + 6, packet.cumulative);
  store_u16_be(p + 10, packet.window);
  store_u64_be(p + 12, packet.sack[0]);
  store_u64_be(p + 20, packet.sack[1]);
  store_u32_be(p + kAckCrcAt, 0);
  store_u32_be(p + kAckCrcAt, packet_checksum(out, kAckCrcAt));
}

Decoded decode(std::span<const std::byte> bytes) noexcept {
  Decoded d;
  if (bytes.size() < kDataHeaderSize) {
    d.error = PacketError::too_short;
    return d;
  }
  const std::optional<PacketType> type = peek_type(bytes);
  if (type == PacketType::data) {
    const std::size_t length = load_u16_be(bytes.data() + 10);
    if (bytes.size() != kDataHeaderSize + length) {
      d.error = PacketError::bad_length;
      return d;
    }
    if (load_u32_be(bytes.data() + kDataCrcAt) != packet_checksum(bytes, kDataCrcAt)) {
      d.error = PacketError::bad_checksum;
      return d;
    }
    if ((std::to_integer<std::uint8_t>(bytes[5]) & ~kFlagFin) != 0) {
      d.error = PacketError::bad_flags;
      return d;
    }
    d.data = {load_u32_be(bytes.data()), load_u32_be(bytes.data() + 6),
              (std::to_integer<std::uint8_t>(bytes[5]) & kFlagFin) != 0, bytes.subspan(kDataHeaderSize)};
    return d;
  }
  if (type == PacketType::ack) {
    if (bytes.size() != kAckSize) {
      d.error = PacketError::bad_length;
      return d;
    }
    if (load_u32_be(bytes.data() + kAckCrcAt) != packet_checksum(bytes, kAckCrcAt)) {
      d.error = PacketError::bad_checksum;
      return d;
    }
    if (std::to_integer<std::uint8_t>(bytes[5]) != 0) {
      d.error = PacketError::bad_flags;
      return d;
    }
    d.is_ack = true;
    d.ack.conversation = load_u32_be(bytes.data());
    d.ack.cumulative = load_u32_be(bytes.data() + 6);
    d.ack.window = load_u16_be(bytes.data() + 10);
    d.ack.sack = {load_u64_be(bytes.data() + 12), load_u64_be(bytes.data() + 20)};
    return d;
  }
  d.error = PacketError::bad_type;
  return d;
}

}  // namespace volley::arq
