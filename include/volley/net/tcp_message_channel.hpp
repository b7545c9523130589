#pragma once
// Messages over one TCP connection, each behind its length: [length u32 BE]
// [message]. A net::MessageChannel, so the programs that carry messages over
// ARQ or SCTP carry them over TCP as well, as the reference the others are
// measured against. The end of a direction is TCP's own (shutdown, then end of
// file), confirmed when both directions ended.
//
// The length is the peer's word: one over `max_message_size` fails the
// channel (wire::Errc::length_over_maximum) before anything is allocated.
#include <cstddef>
#include <cstdint>
#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include <volley/net/message_channel.hpp>

namespace volley::net {

struct TcpMessageChannelStats {
  std::uint64_t messages_sent = 0;      // accepted by send()
  std::uint64_t messages_received = 0;  // delivered
  std::uint64_t bytes_sent = 0;         // written to the socket, lengths included
  std::uint64_t bytes_received = 0;     // read from the socket, lengths included
};

class TcpMessageChannel final : public MessageChannel {
 public:
  struct Options {
    std::size_t max_message_size = 16 * 1024 * 1024;
  };

  // Over a connected socket. Handlers run on the socket's executor.
  TcpMessageChannel(boost::asio::ip::tcp::socket connected, MessageHandler on_message, Options options);
  // Accepts one peer on `listening` (then closes it) and carries its messages;
  // on_ready() fires once it connected.
  TcpMessageChannel(boost::asio::ip::tcp::acceptor listening, MessageHandler on_message, Options options);
  ~TcpMessageChannel() override;
  TcpMessageChannel(const TcpMessageChannel&) = delete;
  TcpMessageChannel& operator=(const TcpMessageChannel&) = delete;

  void start() override;
  void on_ready(Done ready) override;
  bool send(std::span<const std::byte> message) override;
  void close(Done done) override;
  void on_peer_finished(Done done) override;
  void stop() override;
  std::error_code error() const override;

  const TcpMessageChannelStats& stats() const noexcept;
  // The listening address while it waits for its peer, then the connection's.
  boost::asio::ip::tcp::endpoint local_endpoint() const;

 private:
  struct State;
  // Shared with the handlers in flight, which outlive a stop.
  std::shared_ptr<State> state_;
};

}  // namespace volley::net
