#pragma once
// A UDP echo client: one datagram per message, `in_flight` at once, one more
// for each echo, batched with sendmmsg/recvmmsg (net::UdpEndpoint). Each datagram starts with its
// sequence number, so late and duplicated echoes are told from fresh ones; a
// datagram not back within the loss timeout (EchoRun::loss_timeout) is counted
// as lost (an error) and replaced, so losses never shrink the window or stall the run.
#include <deque>
#include <functional>
#include <memory>

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/udp_endpoint.hpp>

#include "echo_client_core.hpp"

namespace volley::tools {

class UdpEchoClient : public std::enable_shared_from_this<UdpEchoClient> {
 public:
  UdpEchoClient(boost::asio::io_context& loop, const EchoRun& run, EchoClientCounters& counters,
                std::function<void()> done);
  void start(const boost::asio::ip::udp::endpoint& server);

 private:
  void send_more(std::size_t count);
  void on_echo(std::span<const std::byte> datagram);
  void after_batch();
  void check_loss();
  void finish();

  boost::asio::io_context& loop_;
  std::unique_ptr<net::UdpEndpoint> endpoint_;  // made in start(), when the server is known
  boost::asio::steady_timer loss_timer_;
  const EchoRun& run_;
  EchoClientCounters& counters_;
  std::function<void()> done_;
  std::size_t fresh_ = 0;               // echoes answered in the current receive batch
  std::uint64_t errors_counted_ = 0;    // the endpoint's errors already added to counters_
  std::uint64_t truncated_counted_ = 0;
  struct Outstanding {
    EchoRun::Clock::time_point sent;
    bool answered = false;
  };
  std::uint64_t next_sequence_ = 0;
  std::uint64_t window_start_ = 0;   // window_[0] is this sequence; older ones are settled
  std::deque<Outstanding> window_;   // sequences [window_start_, next_sequence_)
  std::size_t in_flight_ = 0;        // unanswered in window_
};

}  // namespace volley::tools
