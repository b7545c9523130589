#pragma once
// Incremental decoder of the gNB message protocol. Bytes arrive in chunks of any
// size (prepare/commit for zero-copy socket reads, or feed() to copy a chunk in);
// next() hands out complete frames as views into the decoder's buffer, valid until
// the next prepare() or feed(). The buffer follows the traffic (see
// detail/stream_buffer.hpp): nothing before the first read, 16 KiB for small
// messages, up to `read_limit` for a stream, a whole frame when one needs it.
//
// Error policy (docs/PROTOCOL.md):
//  - body outside its type's limits, length within 64 KiB: the frame is consumed
//    and returned as `rejected` with the reason; the stream stays in sync.
//  - unknown type or length over 64 KiB: the header cannot be trusted, so the
//    decoder fails for good and every later next() returns `failed`.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <system_error>

#include <volley/gnb/protocol.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/detail/stream_buffer.hpp>

namespace volley::gnb {

enum class DecodeStatus { need_more, frame, rejected, failed };

struct DecodeResult {
  DecodeStatus status = DecodeStatus::need_more;
  Frame frame{};              // frame and rejected
  std::error_code error{};    // rejected and failed
  std::uint16_t raw_type = 0;  // failed: the type field as read
  std::uint32_t raw_length = 0;
};

class FrameDecoder {
 public:
  explicit FrameDecoder(std::size_t read_limit = wire::detail::StreamBuffer::kDefaultReadLimit)
      : buffer_(wire::detail::StreamBuffer::kDefaultBase, read_limit) {}

  // Room for the next read (never empty; allocates only when the buffer grows).
  std::span<std::byte> prepare() { return buffer_.prepare(head_frame_size()); }
  void commit(std::size_t n) noexcept { buffer_.commit(n); }

  // Copies as much of `chunk` as fits and returns how much that was (at least
  // one byte); drain with next() before feeding more.
  std::size_t feed(std::span<const std::byte> chunk);

  DecodeResult next() noexcept;
  // next()'s common case, inline for a session's per-frame path: the frame at
  // the head when it is whole and within its type's bounds (consumed and
  // returned); otherwise nothing is consumed and the caller asks next(),
  // which says what else it is (need more, rejected, failed).
  std::optional<Frame> take_frame() noexcept {
    const std::span<const std::byte> in = buffer_.readable();
    if (in.size() < kHeaderSize || failed()) return std::nullopt;
    const auto index = type_index(wire::load_u16_be(in.data()));
    const std::uint32_t length = wire::load_u32_be(in.data() + 2);
    if (!index || length > in.size() - kHeaderSize || length > kTypes[*index].max_body ||
        length < kTypes[*index].min_body)
      return std::nullopt;
    buffer_.consume(kHeaderSize + length);
    return Frame{kTypes[*index].type, in.subspan(kHeaderSize, length)};
  }
  // The session extensions of type 0x0000 (docs/PROTOCOL.md): the keepalive
  // and the goodbye. Call before next(), which would call type 0 unknown.
  // `partial`: the head could still become a goodbye once more bytes come.
  // Inline: it runs before every frame of a session, and almost every frame
  // fails the first byte.
  enum class Extension { none, keepalive, goodbye, partial };
  Extension take_extension() noexcept {
    const std::span<const std::byte> in = buffer_.readable();
    if (in.size() < 2 || in[0] != std::byte{0} || in[1] != std::byte{0}) return Extension::none;
    return take_extension_rest();
  }

  // The bytes buffered and not yet decoded.
  std::span<const std::byte> readable() const noexcept { return buffer_.readable(); }
  bool failed() const noexcept { return static_cast<bool>(failure_.error); }
  // Bytes of an incomplete frame: non-zero when a peer closes mid-frame.
  std::size_t buffered() const noexcept { return buffer_.size(); }
  // The memory the buffer holds now.
  std::size_t capacity() const noexcept { return buffer_.capacity(); }

 private:
  Extension take_extension_rest() noexcept;
  // The whole size of the frame at the head once its header is in and valid, else 0.
  std::size_t head_frame_size() const noexcept;

  wire::detail::StreamBuffer buffer_;
  DecodeResult failure_{};
};

}  // namespace volley::gnb
