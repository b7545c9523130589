#pragma once
// What every message channel offers, whatever carries it: messages delivered
// once and in order, an orderly end in each direction, and a stop. The ARQ
// channel over UDP (arq::ArqChannel), the SCTP association over UDP
// (arq::SctpChannel) and length-prefixed messages over TCP
// (net::TcpMessageChannel) are each one, so a program that carries messages is
// written once for all three.
//
// A channel runs on one executor (a loop, or a strand of a thread pool): its
// methods are called there and its handlers run there.
#include <functional>
#include <span>
#include <system_error>

namespace volley::net {

class MessageChannel {
 public:
  // The bytes are valid only during the call.
  using MessageHandler = std::function<void(std::span<const std::byte> message)>;
  // No error: success; else why.
  using Done = std::function<void(const std::error_code& error)>;

  virtual ~MessageChannel() = default;

  // Begins to receive (and, for a listening channel, to wait for its peer).
  virtual void start() = 0;
  // Calls `ready` once the channel can carry messages (at once where it can
  // already), or with why it never will. Messages sent before are queued.
  virtual void on_ready(Done ready) = 0;
  // Queues a message; false when refused: error() then says why, and no
  // error means the send queue or window is full for now.
  virtual bool send(std::span<const std::byte> message) = 0;
  // Ends this direction: `done` runs once everything sent arrived and the end
  // was confirmed, or with the reason it could not be.
  virtual void close(Done done) = 0;
  // Calls `done` once the peer ended its direction (everything it sent was
  // delivered), or with the reason the channel failed first.
  virtual void on_peer_finished(Done done) = 0;
  // Stops at once: nothing more is sent or delivered, no handler runs.
  virtual void stop() = 0;
  // Why the channel failed; no error while it has not.
  virtual std::error_code error() const = 0;
};

}  // namespace volley::net
