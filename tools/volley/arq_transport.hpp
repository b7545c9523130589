#pragma once
// The channel arq-send and arq-recv carry their messages over, picked by
// --protocol: the library's ARQ channel over UDP (with FEC if asked), its SCTP
// association over UDP, or its length-prefixed TCP channel. All three are a
// net::MessageChannel, so the commands are written once; what is left here is
// making the one asked for and reporting its own counters.
#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/json/object.hpp>

#include <volley/arq/sctp_channel.hpp>
#include <volley/arq/udp_channel.hpp>
#include <volley/net/tcp_message_channel.hpp>

#include "arq_commands.hpp"

namespace volley::tools {

class MessageTransport {
 public:
  using Channel = std::variant<std::unique_ptr<arq::ArqChannel>, std::unique_ptr<arq::SctpChannel>,
                               std::unique_ptr<net::TcpMessageChannel>>;
  MessageTransport(Channel channel, const boost::asio::ip::udp::endpoint& local);

  net::MessageChannel& channel() const { return *interface_; }
  // Why the channel refused a message, for a report.
  std::string refusal() const;
  std::string protocol() const;  // for the listening line: udp or tcp
  // Where the channel was made: for the listening line.
  const boost::asio::ip::udp::endpoint& local_endpoint() const { return local_; }
  // Datagrams heard from the peer so far, any kind (0 for TCP, whose close is
  // confirmed by the kernel): the receiver lingers until this stops moving.
  std::uint64_t datagrams_heard() const;
  // The channel's own counters for the report.
  boost::json::object report() const;

 private:
  Channel channel_;
  net::MessageChannel* interface_;  // the alternative held, found once: send() is per message
  boost::asio::ip::udp::endpoint local_;
};

// The sending side connects to `to`; the receiving side listens on `at`. The
// channel is started. Throws on a socket error.
std::unique_ptr<MessageTransport> connect_transport(const boost::asio::any_io_executor& executor,
                                                    const ArqOptions& options,
                                                    const boost::asio::ip::udp::endpoint& to,
                                                    net::MessageChannel::MessageHandler on_message);
std::unique_ptr<MessageTransport> listen_transport(const boost::asio::any_io_executor& executor,
                                                   const ArqOptions& options,
                                                   const boost::asio::ip::udp::endpoint& at,
                                                   net::MessageChannel::MessageHandler on_message);

}  // namespace volley::tools
