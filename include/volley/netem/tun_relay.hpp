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
  // Takes ownership of the two descriptors. Runs on `executor` (a loop, or a
  // strand of a thread pool): call start(), stop() and the accessors there.
  TunRelay(const boost::asio::any_io_executor& executor, int fd_a, int fd_b, const Impairment& up,
           const Impairment& down, std::uint64_t seed);
  TunRelay(boost::asio::io_context& loop, int fd_a, int fd_b, const Impairment& up, const Impairment& down,
           std::uint64_t seed)
      : TunRelay(loop.get_executor(), fd_a, fd_b, up, down, seed) {}
  ~TunRelay();
  TunRelay(const TunRelay&) = delete;
  TunRelay& operator=(const TunRelay&) = delete;

  // Throws std::system_error when the kernel refuses the epoll set or the
  // eventfd the relay waits with.
  void start();
  // Stops relaying; the devices close once the relay's wait has ended, which
  // stop() wakes (the loop's run() then returns when nothing else is left).
  void stop();
  // Records every IP packet received and sent (see PcapWriter). Call before start().
  void capture_to(PcapWriter& writer);
  const RelayCore& core() const noexcept { return core_; }
  RelayCore& core() noexcept { return core_; }
  const RelayErrors& errors() const noexcept { return errors_; }

 private:
  void wait_for_packets();
  void drain();
  bool drain(boost::asio::posix::stream_descriptor& from, bool up);
  void close_devices();

  // The devices are read and written without blocking, never with an
  // operation in flight: the relay waits on `ready_` instead, an epoll set of
  // both devices and `stop_`, an eventfd. So stop() ends that wait by making
  // it ready rather than by cancelling it (on Asio's io_uring backend in Boost
  // 1.81 a cancelled operation's completion can be lost, and the loop with it:
  // docs/BENCHMARKS.md, "Asio's io_uring backend").
  boost::asio::posix::stream_descriptor a_;
  boost::asio::posix::stream_descriptor b_;
  boost::asio::posix::stream_descriptor ready_;
  int stop_ = -1;
  std::vector<std::byte> buffer_;
  RelayCore core_;
  RelayErrors errors_;
  PcapWriter* capture_ = nullptr;
  bool stopped_ = false;
  bool waiting_ = false;        // a wait on ready_ is in flight
  bool drain_posted_ = false;   // a drain() is queued on the loop
};

}  // namespace volley::netem
