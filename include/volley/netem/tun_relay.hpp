#pragma once
// `volley netem tun`: relays IP packets between two TUN devices through the
// impaired link (a -> b up, b -> a down). scripts/netem-tun.sh puts each device
// in its own network namespace, so that anything (TCP included) between the two
// namespaces crosses the emulated link. Needs root and /dev/net/tun.
#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/posix/stream_descriptor.hpp>

#include <volley/netem/relay_core.hpp>
#include <volley/netem/udp_relay.hpp>

namespace volley::netem {

// Opens (creating if needed) TUN device `name` without packet information
// headers. Returns the descriptor, or -1 with `error` set.
int open_tun(const std::string& name, std::string& error);

class TunRelay {
 public:
  // Takes ownership of the two descriptors.
  TunRelay(boost::asio::io_context& loop, int fd_a, int fd_b, const Impairment& up, const Impairment& down,
           std::uint64_t seed);

  void start();
  void stop();
  // Records every IP packet received and sent (see PcapWriter). Call before start().
  void capture_to(PcapWriter& writer);
  const RelayCore& core() const noexcept { return core_; }
  RelayCore& core() noexcept { return core_; }
  const RelayErrors& errors() const noexcept { return errors_; }

 private:
  void read(boost::asio::posix::stream_descriptor& from, std::vector<std::byte>& buffer, bool up);

  boost::asio::posix::stream_descriptor a_;
  boost::asio::posix::stream_descriptor b_;
  std::vector<std::byte> buffer_a_, buffer_b_;
  RelayCore core_;
  RelayErrors errors_;
  PcapWriter* capture_ = nullptr;
  bool stopped_ = false;
};

}  // namespace volley::netem
