#pragma once
// `volley netem`'s UDP mode: datagrams from any client to `listen` go up the
// impaired link to `forward`, from a socket of that client's own (so replies
// find their way back), and replies come down the link to the client.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <boost/asio/ip/udp.hpp>

#include <volley/netem/pcap_writer.hpp>
#include <volley/netem/relay_core.hpp>

namespace volley::netem {

struct RelayErrors {
  std::uint64_t send_failures = 0;  // the kernel refused a datagram (buffer full, unreachable)
  std::uint64_t receive_errors = 0;
};

class UdpRelay {
 public:
  // Binds at once; throws boost::system::system_error when it cannot.
  UdpRelay(boost::asio::io_context& loop, const boost::asio::ip::udp::endpoint& listen,
           const boost::asio::ip::udp::endpoint& forward, const Impairment& up, const Impairment& down,
           std::uint64_t seed);

  boost::asio::ip::udp::endpoint local_endpoint() const { return listen_.local_endpoint(); }
  void start();
  void stop();
  // Records every datagram received and sent, as IP/UDP packets with the real
  // addresses, drops and impairments marked (see PcapWriter). Call before start().
  void capture_to(PcapWriter& writer);

  const RelayCore& core() const noexcept { return core_; }
  RelayCore& core() noexcept { return core_; }
  const RelayErrors& errors() const noexcept { return errors_; }
  std::size_t clients() const noexcept { return sessions_.size(); }

 private:
  struct Session {
    boost::asio::ip::udp::endpoint client;
    boost::asio::ip::udp::socket upstream;
    std::vector<std::byte> buffer;
  };

  void record_departure(bool up, const Departure& d);
  void receive_from_clients();
  void receive_from_upstream(std::size_t index);
  std::size_t session_for(const boost::asio::ip::udp::endpoint& client);

  boost::asio::io_context& loop_;
  boost::asio::ip::udp::socket listen_;
  boost::asio::ip::udp::endpoint forward_;
  std::vector<std::byte> buffer_;
  boost::asio::ip::udp::endpoint sender_;
  std::vector<std::unique_ptr<Session>> sessions_;  // index is the packet tag
  std::map<boost::asio::ip::udp::endpoint, std::size_t> by_client_;
  RelayCore core_;
  RelayErrors errors_;
  PcapWriter* capture_ = nullptr;
  bool stopped_ = false;
};

}  // namespace volley::netem
