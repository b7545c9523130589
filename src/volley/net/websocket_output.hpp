#pragma once
// What a WebSocket end sends, as whole frames in one buffer: the transport
// hands it the caller's bytes, control frames and the close, and writes out
// what pending() shows. Whole frames only, so a pong or a close can always
// follow what is already there. A client's payload must be masked (RFC 6455,
// 5.3), so it is copied in either way. No socket: the transport moves the bytes.
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>

#include <volley/wire/websocket.hpp>

namespace volley::net::detail {

class WebSocketOutput {
 public:
  // Without message boundaries, the caller's bytes go as messages of at most this.
  static constexpr std::size_t kMaxStreamMessage = 1 << 20;

  // `masked`: a client's output, each frame under a mask of its own.
  explicit WebSocketOutput(bool masked) : masked_(masked) {
    if (masked_ && (RAND_bytes(reinterpret_cast<unsigned char*>(&mask_state_), sizeof mask_state_) != 1 ||
                    mask_state_ == 0))
      mask_state_ = 0x9E3779B97F4A7C15ull;
  }

  // Bytes that are not a frame: the handshake's request or answer.
  void append_raw(std::span<const std::byte> bytes) {
    const std::size_t at = out_.size();
    out_.resize(at + bytes.size());
    if (!bytes.empty()) std::memcpy(out_.data() + at, bytes.data(), bytes.size());
  }

  // The caller's `total` bytes as binary messages of at most kMaxStreamMessage.
  void append_stream(std::span<const boost::asio::const_buffer> buffers, std::size_t total) {
    GatherCursor from(buffers);
    for (std::size_t left = total; left > 0;) {
      const std::size_t n = std::min(left, kMaxStreamMessage);
      append_frame(wire::websocket::Opcode::binary, n,
                   [&](std::byte* to, const std::array<std::byte, 4>* mask) { from.copy(to, n, mask); });
      left -= n;
    }
  }

  // One binary message of `n` bytes.
  void append_binary(const std::byte* from, std::size_t n) { append_copy(wire::websocket::Opcode::binary, from, n); }

  void append_control(wire::websocket::Opcode opcode, std::span<const std::byte> payload) {
    append_copy(opcode, payload.data(), payload.size());
  }

  // A close frame with `code` (none for no_status) and as much of `reason` as fits.
  void append_close(std::uint16_t code, std::string_view reason = {}) {
    namespace ws = wire::websocket;
    if (code == ws::close_code::no_status) return append_control(ws::Opcode::close, {});
    std::array<std::byte, ws::kMaxControlPayload> payload{std::byte{static_cast<unsigned char>(code >> 8)},
                                                          std::byte{static_cast<unsigned char>(code)}};
    const std::size_t n = std::min(reason.size(), payload.size() - 2);
    if (n > 0) std::memcpy(payload.data() + 2, reason.data(), n);  // an empty view's data() may be null
    append_control(ws::Opcode::close, std::span(payload).first(2 + n));
  }

  // What is still to be written, and that `n` bytes of it were.
  std::span<const std::byte> pending() const noexcept { return std::span(out_).subspan(sent_); }
  void sent(std::size_t n) noexcept {
    sent_ += n;
    if (sent_ == out_.size()) {
      out_.clear();
      sent_ = 0;
    }
  }

 private:
  // Reads a gather list front to back.
  class GatherCursor {
   public:
    explicit GatherCursor(std::span<const boost::asio::const_buffer> buffers) : buffers_(buffers) {}
    void copy(std::byte* to, std::size_t n, const std::array<std::byte, 4>* mask) {
      std::size_t phase = 0;
      while (n > 0) {
        const boost::asio::const_buffer& b = buffers_[index_];
        const std::size_t take = std::min(n, b.size() - offset_);
        const auto* from = static_cast<const std::byte*>(b.data()) + offset_;
        if (mask != nullptr) {
          wire::websocket::mask_copy(from, to, take, *mask, phase);
        } else {
          std::memcpy(to, from, take);
        }
        to += take;
        phase += take;
        n -= take;
        offset_ += take;
        if (offset_ == b.size()) {
          ++index_;
          offset_ = 0;
        }
      }
    }

   private:
    std::span<const boost::asio::const_buffer> buffers_;
    std::size_t index_ = 0;
    std::size_t offset_ = 0;
  };

  std::array<std::byte, 4> next_mask() noexcept {
    // xorshift64*: unpredictable enough for masking, whose point is that a
    // script cannot choose the bytes on the wire (RFC 6455, 10.3).
    mask_state_ ^= mask_state_ >> 12;
    mask_state_ ^= mask_state_ << 25;
    mask_state_ ^= mask_state_ >> 27;
    const std::uint64_t v = mask_state_ * 0x2545F4914F6CDD1Dull;
    std::array<std::byte, 4> key{};
    std::memcpy(key.data(), &v, 4);
    return key;
  }

  // Appends one whole frame; `fill(to, mask)` writes its payload.
  template <class Fill>
  void append_frame(wire::websocket::Opcode opcode, std::size_t length, Fill&& fill) {
    const std::size_t at = out_.size();
    out_.resize(at + wire::websocket::kMaxHeaderSize + length);
    std::optional<std::array<std::byte, 4>> mask;
    if (masked_) mask = next_mask();
    const std::size_t header =
        wire::websocket::encode_header(out_.data() + at, true, opcode, length, mask ? &*mask : nullptr);
    fill(out_.data() + at + header, mask ? &*mask : nullptr);
    out_.resize(at + header + length);
  }

  void append_copy(wire::websocket::Opcode opcode, const std::byte* from, std::size_t n) {
    append_frame(opcode, n, [&](std::byte* to, const std::array<std::byte, 4>* mask) {
      if (n == 0) return;
      if (mask != nullptr) {
        wire::websocket::mask_copy(from, to, n, *mask, 0);
      } else {
        std::memcpy(to, from, n);
      }
    });
  }

  bool masked_;
  std::uint64_t mask_state_ = 0;
  std::vector<std::byte> out_;
  std::size_t sent_ = 0;  // the front of out_ already written
};

}  // namespace volley::net::detail
