#pragma once
// The three ways the ARQ tools carry their messages behind one interface: an
// ARQ channel over UDP (with FEC if asked), an SCTP association over UDP, and
// TCP (length-prefixed), so arq-send and arq-recv are written once.
#include <functional>
#include <memory>
#include <span>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/json/object.hpp>

#include "arq_commands.hpp"

namespace volley::tools {

class MessageTransport {
 public:
  using MessageHandler = std::function<void(std::span<const std::byte> message)>;
  using Done = std::function<void(const std::error_code& error)>;  // no error: success

  virtual ~MessageTransport() = default;
  // False when refused; error() says why.
  virtual bool send(std::span<const std::byte> message) = 0;
  // Runs `done` once everything sent arrived and the peer confirmed the end (or with the failure).
  virtual void close(Done done) = 0;
  // Runs `done` once the peer ended its stream.
  virtual void on_peer_finished(Done done) = 0;
  virtual void stop() = 0;
  // Runs `ready` once the transport can carry messages (an SCTP association
  // is set up first, as a TCP connection is before connect_transport returns).
  virtual void on_ready(Done ready) { ready({}); }
  // Why send() refused, for a report.
  virtual std::string error() const = 0;
  virtual std::string protocol() const = 0;  // for the listening line: udp or tcp
  virtual boost::asio::ip::udp::endpoint local_endpoint() const = 0;
  // Datagrams heard from the peer so far, any kind (0 for TCP, whose close is
  // confirmed by the kernel): the receiver lingers until this stops moving.
  virtual std::uint64_t datagrams_heard() const = 0;
  // The transport's own counters for the report.
  virtual boost::json::object report() const = 0;
};

// The sending side connects to `to`; the receiving side listens on `at`.
// Throws on a socket error.
std::unique_ptr<MessageTransport> connect_transport(const boost::asio::any_io_executor& executor,
                                                    const ArqOptions& options,
                                                    const boost::asio::ip::udp::endpoint& to,
                                                    MessageTransport::MessageHandler on_message);
std::unique_ptr<MessageTransport> listen_transport(const boost::asio::any_io_executor& executor,
                                                   const ArqOptions& options,
                                                   const boost::asio::ip::udp::endpoint& at,
                                                   MessageTransport::MessageHandler on_message);

}  // namespace volley::tools
