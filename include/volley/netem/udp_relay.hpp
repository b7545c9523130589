#pragma once
// `volley netem`'s UDP mode: datagrams from any client to `listen` go up the
// impaired link to `forward`, from a socket of that client's own (so replies
// find their way back), and replies come down the link to the client.
// Per-client state is bounded: at most `max_clients` at once, each forgotten
// after `client_idle` without traffic either way, and a socket that cannot be
// opened (descriptors exhausted) costs that datagram, never the relay.
// Datagrams move in batches (net::UdpEndpoint): a readable socket is drained
// with recvmmsg into one set of buffers shared by all its sockets, and what
// leaves in one loop turn leaves in one sendmmsg per socket.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/udp_endpoint.hpp>
#include <volley/netem/pcap_writer.hpp>
#include <volley/netem/relay_core.hpp>

namespace volley::netem {

struct RelayErrors {
  std::uint64_t send_failures = 0;  // the kernel refused a datagram (buffer full, unreachable)
  std::uint64_t receive_errors = 0;
};

struct RelayLimits {
  std::size_t max_clients = 1024;
  std::chrono::milliseconds client_idle{60'000};
};

struct RelayClientCounts {
  std::uint64_t opened = 0;
  std::uint64_t expired = 0;   // forgotten after client_idle without traffic
  std::uint64_t refused = 0;   // a new client's datagram dropped: max_clients reached or no socket to be had
  std::uint64_t orphaned = 0;  // packets still on the link for a client already forgotten, dropped
};

class UdpRelay {
 public:
  // Binds at once; throws boost::system::system_error when it cannot. Every
  // socket, timer and handler of the relay runs on `executor` (a loop, or a
  // strand of a thread pool): call start(), stop() and the accessors there.
  UdpRelay(const boost::asio::any_io_executor& executor, const boost::asio::ip::udp::endpoint& listen,
           const boost::asio::ip::udp::endpoint& forward, const Impairment& up, const Impairment& down,
           std::uint64_t seed, RelayLimits limits = {});
  UdpRelay(boost::asio::io_context& loop, const boost::asio::ip::udp::endpoint& listen,
           const boost::asio::ip::udp::endpoint& forward, const Impairment& up, const Impairment& down,
           std::uint64_t seed, RelayLimits limits = {})
      : UdpRelay(loop.get_executor(), listen, forward, up, down, seed, limits) {}

  boost::asio::ip::udp::endpoint local_endpoint() const { return listen_.local_endpoint(); }
  void start();
  void stop();
  // Records every datagram received and sent, as IP/UDP packets with the real
  // addresses, drops and impairments marked (see PcapWriter). Call before start().
  void capture_to(PcapWriter& writer);

  const RelayCore& core() const noexcept { return core_; }
  RelayCore& core() noexcept { return core_; }
  // Summed over every socket the relay has had.
  RelayErrors errors() const;
  // System calls and datagrams of every socket the relay has had: how full its batches run.
  net::UdpEndpointStats socket_totals() const;
  const RelayClientCounts& client_counts() const noexcept { return counts_; }
  std::size_t clients() const noexcept { return by_client_.size(); }
  // Datagrams the kernel dropped on the relay's sockets, their receive buffers
  // full (sockets closed since included): losses the link model did not make.
  std::uint64_t kernel_drops();

 private:
  // One client's upstream socket. A packet's tag names its slot and the slot's
  // generation, so a packet still on the link when its client is forgotten
  // (and the slot reused) is recognised and dropped, never misdelivered.
  struct Session {
    boost::asio::ip::udp::endpoint client;
    std::unique_ptr<net::UdpEndpoint> upstream;
    std::uint32_t generation = 0;
    bool live = false;
    std::chrono::steady_clock::time_point last_active{};
  };

  Session* session_of(std::uint64_t tag);
  std::optional<std::uint64_t> session_for(const boost::asio::ip::udp::endpoint& client);
  void forget(std::size_t slot, const net::UdpDropTable& drops);
  void close_counting(net::UdpEndpoint& endpoint, const net::UdpDropTable& drops);
  void expire_idle();
  void arm_sweep();
  void record_departure(bool up, const Departure& d);
  void from_client(std::span<const std::byte> datagram, const boost::asio::ip::udp::endpoint& client);

  boost::asio::any_io_executor executor_;
  std::shared_ptr<net::UdpReceiveBuffers> buffers_;  // every socket's receives: one set, not one per client
  net::UdpEndpoint listen_;
  boost::asio::ip::udp::endpoint forward_;
  RelayLimits limits_;
  std::vector<std::unique_ptr<Session>> slots_;
  std::vector<std::size_t> free_slots_;
  std::map<boost::asio::ip::udp::endpoint, std::size_t> by_client_;
  boost::asio::steady_timer sweep_;
  RelayCore core_;
  RelayClientCounts counts_;
  PcapWriter* capture_ = nullptr;
  net::UdpEndpointStats closed_totals_;  // of the sockets of clients already forgotten
  std::uint64_t closed_socket_drops_ = 0;
  bool stopped_ = false;
};

}  // namespace volley::netem
