#pragma once
// An ARQ channel over a UDP socket: messages sent here reach the peer's
// channel exactly once and in order. Each side is an ArqEndpoint (a sender and
// a receiver sharing one conversation id, so a channel carries data both ways,
// and FEC if given) bound to one socket. A thin layer: it feeds datagrams and
// the time to the state machine and sets one timer for its next deadline;
// datagrams move through a batched net::UdpEndpoint.
// Runs on one executor (a loop, or a strand of a thread pool): the socket's.
#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/arq/endpoint.hpp>
#include <volley/net/message_channel.hpp>
#include <volley/net/udp_endpoint.hpp>

namespace volley::arq {

struct ChannelStats {
  // From an address that is not the peer, or, before a listener has its peer,
  // anything but a valid data packet of its conversation (a stray ack, another
  // conversation's packet, an end of stream at sequence 0, garbage): none of
  // these can capture the listener.
  std::uint64_t foreign_datagrams = 0;
};

// A net::MessageChannel: its errors are arq::Errc, or an errno in std::system_category.
class ArqChannel final : public net::MessageChannel {
 public:

  // `peer` unset: a listener; the source of the first valid data packet of the
  // receiver's conversation (not an end of stream at sequence 0: a
  // conversation carries at least one message) becomes the peer. `socket` must have been made on
  // `executor`, where every handler of the channel then runs (throws
  // std::invalid_argument otherwise: its timer and its datagrams would race).
  ArqChannel(const boost::asio::any_io_executor& executor, boost::asio::ip::udp::socket socket,
             std::optional<boost::asio::ip::udp::endpoint> peer, const SenderConfig& sender,
             const ReceiverConfig& receiver, MessageHandler on_message,
             std::optional<FecConfig> fec = std::nullopt);
  ArqChannel(boost::asio::io_context& loop, boost::asio::ip::udp::socket socket,
             std::optional<boost::asio::ip::udp::endpoint> peer, const SenderConfig& sender,
             const ReceiverConfig& receiver, MessageHandler on_message,
             std::optional<FecConfig> fec = std::nullopt)
      : ArqChannel(loop.get_executor(), std::move(socket), peer, sender, receiver, std::move(on_message), fec) {}

  void start() override;
  // At once: messages are queued for a peer not heard from yet.
  void on_ready(Done ready) override { ready(error()); }
  // False when the sender refuses (buffer full, too large, closed, peer dead).
  bool send(std::span<const std::byte> message) override;
  // Flush: `done` runs once everything sent, end-of-stream included, is
  // acknowledged, or with the reason when the peer is declared dead.
  void close(Done done) override;
  // Calls `done` once the peer's end-of-stream has arrived (everything it sent was delivered).
  void on_peer_finished(Done done) override { peer_done_ = std::move(done); service(); }
  void stop() override;
  // The sender's failure (the peer declared dead); none while it works.
  std::error_code error() const override { return endpoint_.sender().failed() ? endpoint_.sender().error() : std::error_code(); }

  static Nanos now();
  const ArqSender& sender() const noexcept { return endpoint_.sender(); }
  const ArqReceiver& receiver() const noexcept { return endpoint_.receiver(); }
  const ArqEndpoint& endpoint() const noexcept { return endpoint_; }
  const ChannelStats& stats() const noexcept { return stats_; }
  // Datagrams the kernel dropped on the socket, its receive buffer full (read
  // from /proc while open, kept from stop(): for reports, not per packet).
  std::uint64_t kernel_drops() { return udp_.kernel_drops(); }
  boost::asio::ip::udp::endpoint local_endpoint() const { return udp_.local_endpoint(); }
  // The socket's batching and error counts.
  const net::UdpEndpointStats& udp_stats() const noexcept { return udp_.stats(); }

 private:
  void on_datagram(std::span<const std::byte> packet, const boost::asio::ip::udp::endpoint& from);
  void service();
  void transmit(std::span<const std::byte> packet);

  net::UdpEndpoint udp_;  // packets in and out in batches: a window's worth leaves in one system call
  boost::asio::steady_timer timer_;
  std::optional<boost::asio::ip::udp::endpoint> peer_;
  std::uint32_t conversation_;
  ArqEndpoint endpoint_;
  MessageHandler on_message_;
  Done close_done_, peer_done_;
  ChannelStats stats_;
  bool stopped_ = false;
};

}  // namespace volley::arq
