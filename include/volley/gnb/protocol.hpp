#pragma once
// The gNB message protocol: [type u16 BE][body length u32 BE][body].
// The 6-byte header is not counted in the length. See docs/PROTOCOL.md.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <system_error>

namespace volley::gnb {

enum class MessageType : std::uint16_t {
  control = 0x1001,
  ack = 0x1002,
  nack = 0x1003,
  ack_checksum = 0x1004,
  data = 0x8001,
};

inline constexpr std::size_t kHeaderSize = 6;
inline constexpr std::size_t kMaxBodyLength = 64 * 1024;  // the data message limit
inline constexpr std::size_t kMaxFrameSize = kHeaderSize + kMaxBodyLength;
inline constexpr std::size_t kTypeCount = 5;
// A session-level keepalive, not a message: type 0x0000 with an empty body (six
// zero bytes). Only a gNB session (gnb::make_gnb_codec) accepts it; to the plain
// decoder type 0 stays unknown. See docs/PROTOCOL.md.
inline constexpr std::size_t kKeepaliveSize = kHeaderSize;
// The session's goodbye (a draining server's "go elsewhere"): type 0x0000
// with a one-byte body, 0x01: `00 00 00 00 00 01 01`. A session extension too.
inline constexpr std::size_t kGoodbyeSize = kHeaderSize + 1;

struct TypeInfo {
  MessageType type;
  std::string_view name;
  std::size_t min_body;  // bytes the type's body layout needs (docs/PROTOCOL.md)
  std::size_t max_body;  // the protocol's per-type limit
};

// Indexed by type_index(); the order is the report order.
inline constexpr std::array<TypeInfo, kTypeCount> kTypes{{
    {MessageType::control, "control", 4, 64},
    {MessageType::ack, "ack", 4, 16},
    {MessageType::nack, "nack", 6, 12},
    {MessageType::ack_checksum, "ack-checksum", 8, 16},
    {MessageType::data, "data", 0, kMaxBodyLength},
}};

// Two compares, where a switch over the five values compiles to a tree of
// them: it runs twice for every frame a gNB session takes.
constexpr std::optional<std::size_t> type_index(std::uint16_t raw) noexcept {
  if (const unsigned control_based = raw - 0x1001u; control_based < 4) return control_based;  // control .. ack_checksum
  if (raw == 0x8001) return 4;
  return std::nullopt;
}

constexpr std::size_t type_index(MessageType t) noexcept { return *type_index(static_cast<std::uint16_t>(t)); }
constexpr const TypeInfo& type_info(MessageType t) noexcept { return kTypes[type_index(t)]; }

// A decoded frame: a view into the decoder's (or caller's) buffer.
struct Frame {
  MessageType type;
  std::span<const std::byte> body;
  std::size_t wire_size() const noexcept { return kHeaderSize + body.size(); }
};

// The frame held by the bytes of one whole frame whose header was checked already
// (a gNB session's message, a rejected frame's bytes).
inline Frame frame_of(std::span<const std::byte> whole) noexcept {
  const auto type = static_cast<std::uint16_t>((std::to_integer<unsigned>(whole[0]) << 8) |
                                               std::to_integer<unsigned>(whole[1]));
  return {static_cast<MessageType>(type), whole.subspan(kHeaderSize)};
}

// The size of the frame that starts `bytes`, by its header; 0 while the
// header is incomplete. Where a stream of frames splits into one message per
// frame (a WebSocket transport's WebSocketOptions::message_size).
inline std::size_t frame_size(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < kHeaderSize) return 0;
  const std::byte* p = bytes.data() + 2;
  return kHeaderSize + ((std::to_integer<std::size_t>(p[0]) << 24) | (std::to_integer<std::size_t>(p[1]) << 16) |
                        (std::to_integer<std::size_t>(p[2]) << 8) | std::to_integer<std::size_t>(p[3]));
}

// Writes the header for any 16-bit type and length: the generator uses this to
// produce invalid frames on purpose. `out` must hold kHeaderSize bytes.
void write_header(std::byte* out, std::uint16_t type, std::uint32_t body_length) noexcept;

// Encodes a valid frame into `out`; returns the bytes written, 0 with `ec` set when
// the body breaks its type's limits or `out` is too small.
std::size_t encode_frame(MessageType type, std::span<const std::byte> body, std::span<std::byte> out,
                         std::error_code& ec) noexcept;
std::size_t encode_frame(MessageType type, std::span<const std::byte> body, std::span<std::byte> out);

// ---- Body layouts of the control exchange (docs/PROTOCOL.md) ----

enum class NackCause : std::uint16_t {
  body_too_short = 1,  // no room for the transaction id
  body_too_long = 2,   // over the control limit of 64 bytes
};

struct Control {
  std::uint32_t transaction_id;
  std::span<const std::byte> payload;  // the bytes after the id
};
struct Ack {
  std::uint32_t transaction_id;
};
struct Nack {
  std::uint32_t transaction_id;
  NackCause cause;
};
struct AckChecksum {
  std::uint32_t transaction_id;
  std::uint32_t crc32c;  // over the whole control body, id included
};

// Parsers check the body's size against the type's layout.
std::optional<Control> parse_control(std::span<const std::byte> body) noexcept;
std::optional<Ack> parse_ack(std::span<const std::byte> body) noexcept;
std::optional<Nack> parse_nack(std::span<const std::byte> body) noexcept;
std::optional<AckChecksum> parse_ack_checksum(std::span<const std::byte> body) noexcept;

// Complete reply frames, fixed size, built on the stack.
inline constexpr std::size_t kAckFrameSize = kHeaderSize + 4;
inline constexpr std::size_t kNackFrameSize = kHeaderSize + 6;
inline constexpr std::size_t kAckChecksumFrameSize = kHeaderSize + 8;
std::array<std::byte, kAckFrameSize> make_ack_frame(const Ack& ack) noexcept;
std::array<std::byte, kNackFrameSize> make_nack_frame(const Nack& nack) noexcept;
std::array<std::byte, kAckChecksumFrameSize> make_ack_checksum_frame(const AckChecksum& ack) noexcept;

}  // namespace volley::gnb
