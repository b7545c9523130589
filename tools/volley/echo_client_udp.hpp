#pragma once
// A UDP echo client: one datagram per message, `in_flight` at once, one more
// for each echo, batched with sendmmsg/recvmmsg. Each datagram starts with its
// sequence number, so a late echo is told from a fresh one; datagrams not back
// within the loss timeout are counted as lost (errors) and replaced, never
// waited on forever.
#include <functional>
#include <memory>

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/udp_batch.hpp>

#include "echo_client_core.hpp"

namespace volley::tools {

class UdpEchoClient : public std::enable_shared_from_this<UdpEchoClient> {
 public:
  static constexpr std::chrono::milliseconds kLossTimeout{200};

  UdpEchoClient(boost::asio::io_context& loop, const EchoRun& run, EchoClientCounters& counters,
                std::function<void()> done);
  void start(const boost::asio::ip::udp::endpoint& server);

 private:
  void send_more(std::size_t count);
  void wait_read();
  void drain();
  void check_loss();
  void finish();

  boost::asio::ip::udp::socket socket_;
  boost::asio::steady_timer loss_timer_;
  const EchoRun& run_;
  EchoClientCounters& counters_;
  std::function<void()> done_;
  net::UdpBatch out_;
  net::UdpBatch in_;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t expected_from_ = 0;  // echoes of sequences below this were given up on
  std::size_t in_flight_ = 0;
  std::uint64_t received_since_check_ = 0;
  std::vector<EchoRun::Clock::time_point> sent_at_;  // --rtt: by sequence modulo its size
};

}  // namespace volley::tools
