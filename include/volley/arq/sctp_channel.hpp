#pragma once
// An ordered, reliable SCTP association carried in UDP datagrams: the reliable
// control of the ARQ benchmarks (the role kernel SCTP had in the classic ARQ
// benchmark), needing no kernel SCTP. The SCTP stack is libusrsctp in its
// "connection" mode: it hands us each SCTP packet to put in a datagram, we
// hand it each datagram that arrives, and we drive its timers from the loop,
// so the packets pass through the netem relay like any UDP traffic.
//
// libusrsctp keeps one stack per process: at most one SctpChannel may exist
// in a process at a time (a second one throws). Runs on one loop.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <system_error>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <volley/net/message_channel.hpp>

namespace volley::arq {

struct SctpStats {
  std::uint64_t messages_sent = 0;      // accepted by the association
  std::uint64_t messages_received = 0;  // delivered, in order
  std::uint64_t datagrams_sent = 0;
  std::uint64_t datagrams_received = 0;
  std::uint64_t bytes_sent = 0;         // SCTP packets on the wire, every kind
  std::uint64_t foreign_datagrams = 0;  // from an address that is not the peer
  std::uint64_t retransmissions = 0;    // SCTP's own count of resent chunks (where it reports it)
  // The peer aborted the shutdown handshake after everything either end sent
  // was acknowledged: an ending, not a loss (counted so it is never silent).
  std::uint64_t shutdown_aborts = 0;
};

// A net::MessageChannel: its errors are arq::Errc, or an errno in std::system_category.
class SctpChannel final : public net::MessageChannel {
 public:

  // `peer` set: connects to it; unset: listens, and the source of the first
  // datagram becomes the peer. `socket` must have been made on `executor` (a
  // loop, or a strand of a thread pool), where every handler of the channel
  // then runs (throws std::invalid_argument otherwise).
  SctpChannel(const boost::asio::any_io_executor& executor, boost::asio::ip::udp::socket socket,
              std::optional<boost::asio::ip::udp::endpoint> peer, MessageHandler on_message);
  SctpChannel(boost::asio::io_context& loop, boost::asio::ip::udp::socket socket,
              std::optional<boost::asio::ip::udp::endpoint> peer, MessageHandler on_message)
      : SctpChannel(loop.get_executor(), std::move(socket), peer, std::move(on_message)) {}
  ~SctpChannel() override;
  SctpChannel(const SctpChannel&) = delete;
  SctpChannel& operator=(const SctpChannel&) = delete;

  void start() override;
  // Calls `ready` once the association is up (at once if it is), or with the
  // reason it could not be set up.
  void on_ready(Done ready) override;
  // Queues a message (kept until the association is up); false once the
  // association failed or the channel is closing (see error()).
  bool send(std::span<const std::byte> message) override;
  // Graceful close: once every message was acknowledged the association shuts
  // down; `done` runs then, or with the reason when it was lost.
  void close(Done done) override;
  // Calls `done` once the peer shut its side down (everything it sent arrived).
  void on_peer_finished(Done done) override;
  void stop() override;

  const SctpStats& stats() const noexcept;
  // Datagrams the kernel dropped on the socket, its receive buffer full (read
  // from /proc while open, kept from stop(): for reports, not per packet).
  std::uint64_t kernel_drops() const;
  std::error_code error() const override;
  boost::asio::ip::udp::endpoint local_endpoint() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace volley::arq
