#pragma once
// The RPC frame: [sequence u32 BE][body size u32 BE][message id u32 BE][body].
// The sequence correlates a reply with its request; message id 0xFFFFFFFF is an
// error reply whose body is a serialized RpcError. See docs/PROTOCOL.md.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <system_error>

#include <volley/wire/detail/stream_buffer.hpp>

namespace volley::rpc {

inline constexpr std::size_t kHeaderSize = 12;
inline constexpr std::uint32_t kErrorMessageId = 0xFFFFFFFFu;
// 1 MiB by default, as the checked frame: a larger body is an argument away, and
// a peer cannot make every connection hold more than this for one frame.
inline constexpr std::size_t kDefaultMaxBody = 1024 * 1024;

struct RpcError {
  std::uint32_t code;  // ErrorCode below
  std::string message;
};

enum class ErrorCode : std::uint32_t {
  unknown_message_id = 1,  // no handler for that id
  bad_request = 2,         // the body did not decode as the handler's request type
  handler_failed = 3,      // the handler threw
};

struct Frame {
  std::uint32_t sequence;
  std::uint32_t message_id;
  std::span<const std::byte> body;
};

void write_header(std::byte* out, std::uint32_t sequence, std::uint32_t body_size, std::uint32_t message_id) noexcept;

// The size of the frame that starts `bytes`, by its header; 0 while the
// header is incomplete (WebSocketOptions::message_size: one message a frame).
inline std::size_t frame_size(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < kHeaderSize) return 0;
  const std::byte* p = bytes.data() + 4;
  return kHeaderSize + ((std::to_integer<std::size_t>(p[0]) << 24) | (std::to_integer<std::size_t>(p[1]) << 16) |
                        (std::to_integer<std::size_t>(p[2]) << 8) | std::to_integer<std::size_t>(p[3]));
}

// Incremental decoder, like the gNB one: reads land in prepare(), frames come out
// of next() as views valid until the next prepare(). A body size over the
// maximum cannot be trusted and fails the stream for good.
class FrameDecoder {
 public:
  // The buffer follows the traffic (wire/detail/stream_buffer.hpp): it holds
  // a body of up to `max_body` whole only while one is in flight.
  explicit FrameDecoder(std::size_t max_body = kDefaultMaxBody,
                        std::size_t read_limit = wire::detail::StreamBuffer::kDefaultReadLimit)
      : max_body_(max_body), buffer_(wire::detail::StreamBuffer::kDefaultBase, read_limit) {}

  std::span<std::byte> prepare() { return buffer_.prepare(head_frame_size()); }
  void commit(std::size_t n) noexcept { buffer_.commit(n); }

  enum class Status { need_more, frame, failed };
  Status next(Frame& out) noexcept;
  std::size_t buffered() const noexcept { return buffer_.size(); }
  std::size_t capacity() const noexcept { return buffer_.capacity(); }

 private:
  std::size_t head_frame_size() const noexcept;

  std::size_t max_body_;
  wire::detail::StreamBuffer buffer_;
  bool failed_ = false;
};

}  // namespace volley::rpc
