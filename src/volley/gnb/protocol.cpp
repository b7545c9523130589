#include <volley/gnb/protocol.hpp>

#include <cstring>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/error.hpp>

namespace volley::gnb {

// The byte order and error vocabulary are the wire module's.
using wire::Errc;
using wire::load_u16_be;
using wire::load_u32_be;
using wire::store_u16_be;
using wire::store_u32_be;

void write_header(std::byte* out, std::uint16_t type, std::uint32_t body_length) noexcept {
  store_u16_be(out, type);
  store_u32_be(out + 2, body_length);
}

std::size_t encode_frame(MessageType type, std::span<const std::byte> body, std::span<std::byte> out,
                         std::error_code& ec) noexcept {
  const TypeInfo& info = type_info(type);
  if (body.size() > info.max_body) {
    ec = Errc::body_too_long;
    return 0;
  }
  if (body.size() < info.min_body) {
    ec = Errc::body_too_short;
    return 0;
  }
  const std::size_t total = kHeaderSize + body.size();
  if (out.size() < total) {
    ec = Errc::buffer_too_small;
    return 0;
  }
  write_header(out.data(), static_cast<std::uint16_t>(type), static_cast<std::uint32_t>(body.size()));
  if (!body.empty()) std::memcpy(out.data() + kHeaderSize, body.data(), body.size());
  ec.clear();
  return total;
}

std::size_t encode_frame(MessageType type, std::span<const std::byte> body, std::span<std::byte> out) {
  std::error_code ec;
  const std::size_t n = encode_frame(type, body, out, ec);
  if (ec) throw std::system_error(ec, "gnb::encode_frame");
  return n;
}

std::optional<Control> parse_control(std::span<const std::byte> body) noexcept {
  if (body.size() < 4 || body.size() > type_info(MessageType::control).max_body) return std::nullopt;
  return Control{load_u32_be(body.data()), body.subspan(4)};
}

std::optional<Ack> parse_ack(std::span<const std::byte> body) noexcept {
  if (body.size() < 4 || body.size() > type_info(MessageType::ack).max_body) return std::nullopt;
  return Ack{load_u32_be(body.data())};
}

std::optional<Nack> parse_nack(std::span<const std::byte> body) noexcept {
  if (body.size() < 6 || body.size() > type_info(MessageType::nack).max_body) return std::nullopt;
  return Nack{load_u32_be(body.data()), static_cast<NackCause>(load_u16_be(body.data() + 4))};
}

std::optional<AckChecksum> parse_ack_checksum(std::span<const std::byte> body) noexcept {
  if (body.size() < 8 || body.size() > type_info(MessageType::ack_checksum).max_body) return std::nullopt;
  return AckChecksum{load_u32_be(body.data()), load_u32_be(body.data() + 4)};
}

std::array<std::byte, kAckFrameSize> make_ack_frame(const Ack& ack) noexcept {
  std::array<std::byte, kAckFrameSize> f{};
  write_header(f.data(), static_cast<std::uint16_t>(MessageType::ack), 4);
  store_u32_be(f.data() + kHeaderSize, ack.transaction_id);
  return f;
}

std::array<std::byte, kNackFrameSize> make_nack_frame(const Nack& nack) noexcept {
  std::array<std::byte, kNackFrameSize> f{};
  write_header(f.data(), static_cast<std::uint16_t>(MessageType::nack), 6);
  store_u32_be(f.data() + kHeaderSize, nack.transaction_id);
  store_u16_be(f.data() + kHeaderSize + 4, static_cast<std::uint16_t>(nack.cause));
  return f;
}

std::array<std::byte, kAckChecksumFrameSize> make_ack_checksum_frame(const AckChecksum& ack) noexcept {
  std::array<std::byte, kAckChecksumFrameSize> f{};
  write_header(f.data(), static_cast<std::uint16_t>(MessageType::ack_checksum), 8);
  store_u32_be(f.data() + kHeaderSize, ack.transaction_id);
  store_u32_be(f.data() + kHeaderSize + 4, ack.crc32c);
  return f;
}

}  // namespace volley::gnb
