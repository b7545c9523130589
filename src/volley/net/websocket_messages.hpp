#pragma once
// Where a WebSocket end's outgoing messages begin and end. The caller writes a
// byte stream; this cuts it into messages as WebSocketOptions says (each write
// a message, one message per protocol frame, or as long as the messages
// received) and appends them to a WebSocketOutput. Bytes that do not make a
// whole message yet wait here. No socket and no clock: the transport feeds it.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include <boost/asio/buffer.hpp>

#include <volley/net/websocket.hpp>

#include "websocket_output.hpp"

namespace volley::net::detail {

class OutgoingMessages {
 public:
  explicit OutgoingMessages(const WebSocketOptions& options)
      : message_size_(options.mirror_incoming_messages ? nullptr : options.message_size),
        mirror_(options.mirror_incoming_messages) {}

  // A message of `size` bytes came in whole (mirror_incoming_messages): its
  // echo is the next message out. False past kMaxUnansweredMessages waiting.
  bool received(std::uint64_t size) {
    if (received_sizes_.size() >= kMaxUnansweredMessages) return false;
    received_sizes_.push_back(size);
    return true;
  }

  // The caller's `total` bytes, as the messages they make; `receiving`: a
  // message is still coming in (with mirroring, bytes beyond the messages
  // received wait for it instead of going as one message).
  void write(std::span<const boost::asio::const_buffer> buffers, std::size_t total, bool receiving,
             WebSocketOutput& out) {
    if (mirror_) return as_received(buffers, receiving, out);
    if (message_size_) return by_boundaries(buffers, out);
    out.append_stream(buffers, total);
  }

  // Bytes written that are not yet a whole message.
  std::size_t waiting() const noexcept { return pending_.size(); }

 private:
  void take(std::span<const boost::asio::const_buffer> buffers) {
    for (const auto& b : buffers) {
      const auto* p = static_cast<const std::byte*>(b.data());
      pending_.insert(pending_.end(), p, p + b.size());
    }
  }

  void forget(std::size_t front) {
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(front));
  }

  // One message per message received, as long.
  void as_received(std::span<const boost::asio::const_buffer> buffers, bool receiving, WebSocketOutput& out) {
    take(buffers);
    std::size_t at = 0;
    while (!received_sizes_.empty() && received_sizes_.front() <= pending_.size() - at) {
      out.append_binary(pending_.data() + at, static_cast<std::size_t>(received_sizes_.front()));
      at += static_cast<std::size_t>(received_sizes_.front());
      received_sizes_.pop_front();
    }
    // Bytes of a message still arriving wait for its end; bytes beyond every
    // message received (a server that says something of its own) go as one.
    if (received_sizes_.empty() && !receiving && at < pending_.size()) {
      out.append_binary(pending_.data() + at, pending_.size() - at);
      at = pending_.size();
    }
    forget(at);
  }

  // One message per protocol frame, sent once the frame is whole.
  void by_boundaries(std::span<const boost::asio::const_buffer> buffers, WebSocketOutput& out) {
    take(buffers);
    std::size_t at = 0;
    while (at < pending_.size()) {
      const std::span<const std::byte> rest(pending_.data() + at, pending_.size() - at);
      const std::size_t n = message_size_(rest);
      if (n == 0 || n > rest.size()) break;
      out.append_binary(rest.data(), n);
      at += n;
    }
    forget(at);
  }

  std::function<std::size_t(std::span<const std::byte>)> message_size_;
  bool mirror_;
  std::vector<std::byte> pending_;
  std::deque<std::uint64_t> received_sizes_;  // lengths of the messages received, still to echo
};

}  // namespace volley::net::detail
