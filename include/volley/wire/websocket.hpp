#pragma once
/// @file
/// WebSocket frames (RFC 6455, section 5) with no socket under them: the frame
/// header's encoding, masking, and a receiver that turns a stream of frames
/// into the payload bytes of binary messages, control frames to answer, and
/// protocol errors, each with the close code the RFC gives it. The transport
/// in volley/net/websocket.hpp runs it on a connection.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <system_error>

namespace volley::wire::websocket {

enum class Opcode : std::uint8_t { continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10 };

/// Close codes used here (RFC 6455, 7.4.1).
namespace close_code {
inline constexpr std::uint16_t normal = 1000;
inline constexpr std::uint16_t going_away = 1001;
inline constexpr std::uint16_t protocol_error = 1002;
inline constexpr std::uint16_t unsupported_data = 1003;
inline constexpr std::uint16_t no_status = 1005;  ///< never sent: a close frame without a code
inline constexpr std::uint16_t invalid_payload = 1007;
inline constexpr std::uint16_t policy_violation = 1008;
inline constexpr std::uint16_t message_too_big = 1009;
}  // namespace close_code

/// What is wrong with a peer's frames; each maps to the close code sent back.
enum class Errc {
  reserved_bits = 1,        ///< RSV1-3 set with no extension negotiated (1002)
  unknown_opcode,           ///< an opcode RFC 6455 reserves (1002)
  fragmented_control,       ///< a control frame without FIN (1002)
  control_too_long,         ///< a control frame over 125 bytes (1002)
  unmasked_client_frame,    ///< a client's frame without a mask (1002)
  masked_server_frame,      ///< a server's frame with a mask (1002)
  non_minimal_length,       ///< a length in more bytes than it needs (1002)
  length_too_large,         ///< a 64-bit length with its top bit set (1002)
  unexpected_continuation,  ///< a continuation frame with no message begun (1002)
  unfinished_message,       ///< a new message before the last one's final frame (1002)
  text_message,             ///< a text message: only binary messages are carried (1003)
  message_too_big,          ///< a message over the receiver's maximum (1009)
  bad_close_payload,        ///< a close frame with a 1-byte payload (1002)
  bad_close_code,           ///< a close code no endpoint may send (1002)
  close_reason_not_utf8,    ///< a close reason that is not UTF-8 (1007)
  empty_frame_flood,        ///< more than kMaxEmptyFramesInARow data frames in a row that carry no byte (1008)
  control_flood,            ///< pings or pongs faster than the transport allows (1008; the transport's own check)
  unanswered_messages,      ///< more messages waiting for their echo than the transport keeps (1008; its own check)
};
const std::error_category& websocket_category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), websocket_category()}; }
/// The close code an endpoint sends when it finds `e` in its peer's frames.
std::uint16_t close_code_for(Errc e) noexcept;
/// Whether a received close frame may carry `code` (RFC 6455, 7.4).
bool is_valid_close_code(std::uint16_t code) noexcept;
bool is_utf8(std::string_view text) noexcept;

inline constexpr std::size_t kMaxHeaderSize = 14;
inline constexpr std::size_t kMaxControlPayload = 125;
/// Data frames that carry nothing (empty fragments, empty messages) in a row
/// before one with a byte: more is a flood that costs the receiver work for
/// no data (close 1008). A real peer sends a few at most.
inline constexpr std::uint32_t kMaxEmptyFramesInARow = 1024;

/// Writes a frame header for a payload of `length` bytes at `out` and returns
/// its size (2 to 14 bytes). `mask` set: the frame is masked with it (a
/// client's frames must be; see mask_copy for the payload).
std::size_t encode_header(std::byte* out, bool fin, Opcode opcode, std::uint64_t length,
                          const std::array<std::byte, 4>* mask = nullptr) noexcept;

/// Copies `n` bytes from `from` to `to`, XORed with `key` starting at key
/// byte `phase` (the payload offset modulo 4); `from` may equal `to`.
void mask_copy(const std::byte* from, std::byte* to, std::size_t n, const std::array<std::byte, 4>& key,
               std::size_t phase) noexcept;

/// A peer's frames in, binary message bytes out. Incremental: input may be cut
/// anywhere. Stops after each control frame so its owner can answer it.
class Receiver {
 public:
  enum class Event {
    none,   ///< the input is used up or `out` is full
    ping,   ///< a ping arrived: send a pong with control_payload()
    pong,   ///< a pong arrived
    close,  ///< a close frame arrived: close_code() and close_reason(); nothing follows
    error,  ///< the peer broke the protocol: error(); nothing follows
    message_end,  ///< with report_message_ends(): a message's last byte is in `out`; last_message_size()
  };
  struct Result {
    std::size_t consumed = 0;  ///< input bytes used
    std::size_t produced = 0;  ///< payload bytes written to `out`
    Event event = Event::none;
  };

  /// `masked_input`: the peer is a client, whose frames must be masked (and a
  /// server's must not). `max_message_size`: a longer message is an error (1009).
  Receiver(bool masked_input, std::uint64_t max_message_size) noexcept
      : masked_input_(masked_input), max_message_size_(max_message_size) {}

  /// Decodes from `in` and writes the payload of binary messages (unmasked)
  /// to `out`, message after message with no boundary marked: a stream.
  Result decode(std::span<const std::byte> in, std::span<std::byte> out) noexcept;

  std::span<const std::byte> control_payload() const noexcept { return {control_.data(), control_size_}; }
  std::uint16_t close_code() const noexcept { return close_code_; }
  std::string_view close_reason() const noexcept;
  std::error_code error() const noexcept { return error_; }
  /// A message begun and not finished.
  bool in_message() const noexcept { return in_message_; }
  /// Messages whose final frame arrived.
  std::uint64_t messages() const noexcept { return messages_; }
  /// Stop at the end of every message with Event::message_end (off: the
  /// messages run together, one stream).
  void report_message_ends(bool on) noexcept { report_message_ends_ = on; }
  /// The size of the message that last ended.
  std::uint64_t last_message_size() const noexcept { return message_size_; }

 private:
  enum class State { header, payload, done };
  std::size_t header_needed() const noexcept;
  Event fail(Errc e) noexcept;
  Event begin_frame() noexcept;  // the header is complete in header_
  Event end_frame() noexcept;    // the payload is complete

  bool masked_input_;
  std::uint64_t max_message_size_;
  State state_ = State::header;
  std::array<std::byte, kMaxHeaderSize> header_{};
  std::size_t header_size_ = 0;
  bool fin_ = false;
  Opcode opcode_ = Opcode::binary;
  bool masked_ = false;
  std::array<std::byte, 4> key_{};
  std::uint64_t remaining_ = 0;  // payload bytes of the current frame still to come
  std::size_t phase_ = 0;        // payload bytes of the current frame so far, modulo 4
  bool in_message_ = false;
  std::uint64_t message_size_ = 0;
  std::uint64_t messages_ = 0;
  bool report_message_ends_ = false;
  std::uint32_t empty_frames_in_a_row_ = 0;
  std::array<std::byte, kMaxControlPayload> control_{};
  std::size_t control_size_ = 0;
  std::uint16_t close_code_ = close_code::no_status;
  std::error_code error_;
};

}  // namespace volley::wire::websocket

/// @cond TRAITS
template <>
struct std::is_error_code_enum<volley::wire::websocket::Errc> : std::true_type {};
/// @endcond
