#pragma once
// The checked frame: [total length u24 BE, header included][type u8: 0 heartbeat,
// 1 message][XOR of the payload bytes u8][payload]. See docs/PROTOCOL.md.
//
// The decoder never wedges: a bad checksum or an unknown type skips the frame
// (its length is still believable); a total length under 5 skips the 5-byte
// header (a naive reader hangs there); a frame longer than the decoder holds
// is skipped as it streams in, never buffered. Each is reported as `rejected`
// with the reason; whether the connection then goes on or closes is the
// session's policy.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <system_error>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/detail/stream_buffer.hpp>

namespace volley::wire::checked {

enum class FrameType : std::uint8_t { heartbeat = 0, message = 1 };

inline constexpr std::size_t kHeaderSize = 5;
inline constexpr std::size_t kMaxTotalLength = 0xFFFFFF;  // what a u24 can say
inline constexpr std::size_t kDefaultMaxFrame = kHeaderSize + 1024 * 1024;

std::uint8_t xor_checksum(std::span<const std::byte> payload) noexcept;
// Copies `from` to `to` (which must not overlap it) and returns its XOR, in one pass.
std::uint8_t copy_with_xor(std::span<const std::byte> from, std::byte* to) noexcept;

// Encodes into `out` (the checksum computed during the copy); returns the bytes written, 0 with `ec` set when the
// payload is too long for the u24 length or `out` too small.
std::size_t encode(FrameType type, std::span<const std::byte> payload, std::span<std::byte> out,
                   std::error_code& ec) noexcept;
std::size_t encode(FrameType type, std::span<const std::byte> payload, std::span<std::byte> out);
std::array<std::byte, kHeaderSize> heartbeat_frame() noexcept;

// The size of the frame that starts `bytes`, by its length field (never
// under the header); 0 while the length is incomplete. Where a stream of
// frames splits into one message per frame (WebSocketOptions::message_size).
inline std::size_t frame_size(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < 3) return 0;
  const std::size_t total = (std::to_integer<std::size_t>(bytes[0]) << 16) |
                            (std::to_integer<std::size_t>(bytes[1]) << 8) | std::to_integer<std::size_t>(bytes[2]);
  return total < kHeaderSize ? kHeaderSize : total;
}

struct Frame {
  FrameType type;
  std::span<const std::byte> payload;
};

enum class DecodeStatus { need_more, frame, rejected };

struct DecodeResult {
  DecodeStatus status = DecodeStatus::need_more;
  Frame frame{};
  std::error_code error{};     // rejected: bad_checksum, unknown_type, length_below_header, length_over_maximum
  std::uint8_t raw_type = 0;
  std::uint32_t raw_length = 0;
  std::uint8_t raw_checksum = 0;
};

class FrameDecoder {
 public:
  // The buffer follows the traffic (detail/stream_buffer.hpp): it holds a
  // frame of up to `max_frame` whole only while one is in flight.
  explicit FrameDecoder(std::size_t max_frame = kDefaultMaxFrame,
                        std::size_t read_limit = detail::StreamBuffer::kDefaultReadLimit)
      : max_frame_(max_frame), buffer_(detail::StreamBuffer::kDefaultBase, read_limit) {}

  std::span<std::byte> prepare() { return buffer_.prepare(head_frame_size()); }
  void commit(std::size_t n) noexcept { buffer_.commit(n); }
  // Copies as much of `chunk` as fits (at least one byte); drain with next() before feeding more.
  std::size_t feed(std::span<const std::byte> chunk);

  DecodeResult next() noexcept;
  // next()'s common case, inline for a session's per-frame path: the frame at
  // the head when it is whole and valid (consumed and returned); otherwise
  // nothing is consumed and the caller asks next(), which says what else it
  // is (need more, rejected). Its DecodeResult, with a std::error_code that
  // is a library call to build, is then only for the rest.
  std::optional<Frame> take_frame() noexcept {
    const std::span<const std::byte> in = buffer_.readable();
    if (skipping_ > 0 || in.size() < kHeaderSize) return std::nullopt;
    const std::uint32_t total = load_u24_be(in.data());
    const auto type = std::to_integer<std::uint8_t>(in[3]);
    if (total < kHeaderSize || total > max_frame_ || in.size() < total || type > 1) return std::nullopt;
    const std::span<const std::byte> payload = in.subspan(kHeaderSize, total - kHeaderSize);
    if (xor_checksum(payload) != std::to_integer<std::uint8_t>(in[4])) return std::nullopt;
    buffer_.consume(total);
    return Frame{static_cast<FrameType>(type), payload};
  }
  // The bytes buffered and not yet decoded (while an oversize frame is being
  // skipped, the part of it buffered).
  std::span<const std::byte> readable() const noexcept { return buffer_.readable(); }
  std::size_t buffered() const noexcept { return buffer_.size() + skipping_; }
  std::size_t capacity() const noexcept { return buffer_.capacity(); }

 private:
  std::size_t head_frame_size() const noexcept;

  std::size_t max_frame_;
  detail::StreamBuffer buffer_;
  std::size_t skipping_ = 0;  // bytes of an oversize frame still to discard
};

}  // namespace volley::wire::checked
