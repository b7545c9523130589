#include <volley/netem/tun_relay.hpp>

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace volley::netem {

namespace asio = boost::asio;

int open_tun(const std::string& name, std::string& error) {
  if (name.size() >= IFNAMSIZ) {
    error = "device name too long: " + name;
    return -1;
  }
  const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("cannot open /dev/net/tun: ") + std::strerror(errno) +
            (errno == ENOENT ? " (no TUN support in this kernel or container)" : "") +
            (errno == EACCES || errno == EPERM ? " (needs root or CAP_NET_ADMIN)" : "");
    return -1;
  }
  ifreq ifr{};
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::memcpy(ifr.ifr_name, name.c_str(), name.size());
  if (::ioctl(fd, TUNSETIFF, &ifr) < 0) {
    error = "cannot attach TUN device " + name + ": " + std::strerror(errno) +
            (errno == EPERM ? " (needs root or CAP_NET_ADMIN)" : "");
    ::close(fd);
    return -1;
  }
  return fd;
}

TunRelay::TunRelay(const asio::any_io_executor& executor, int fd_a, int fd_b, const Impairment& up,
                   const Impairment& down, std::uint64_t seed)
    : a_(executor, fd_a),
      b_(executor, fd_b),
      ready_(executor),
      buffer_(65536),
      core_(
          executor, up, down, seed,
          [this](Departure& d) {
            if (capture_) capture_->write(PcapWriter::Interface::sent, d.bytes, capture_comment(d));
            boost::system::error_code ec;
            b_.write_some(asio::buffer(d.bytes), ec);
            if (ec) errors_.send_failures += 1;
          },
          [this](Departure& d) {
            if (capture_) capture_->write(PcapWriter::Interface::sent, d.bytes, capture_comment(d));
            boost::system::error_code ec;
            a_.write_some(asio::buffer(d.bytes), ec);
            if (ec) errors_.send_failures += 1;
          }) {}

void TunRelay::capture_to(PcapWriter& writer) {
  capture_ = &writer;
  // A TUN device hands over whole IP packets: they go into the capture as they are.
  core_.set_arrival_observer([this](bool, std::span<const std::byte> bytes, std::uint64_t, const Admission& a) {
    capture_->write(PcapWriter::Interface::received, bytes, capture_comment(a));
  });
}

TunRelay::~TunRelay() {
  if (stop_ >= 0) ::close(stop_);
}

void TunRelay::start() {
  const int set = ::epoll_create1(EPOLL_CLOEXEC);
  if (set < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  ready_.assign(set);
  stop_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  a_.non_blocking(true);
  b_.non_blocking(true);
  for (const int fd : {a_.native_handle(), b_.native_handle(), stop_}) {
    epoll_event event{};
    event.events = EPOLLIN;  // level-triggered: the set stays readable while a packet waits
    event.data.fd = fd;
    if (::epoll_ctl(set, EPOLL_CTL_ADD, fd, &event) < 0)
      throw std::system_error(errno, std::generic_category(), "epoll_ctl");
  }
  wait_for_packets();
  drain();  // what arrived before the wait
}

void TunRelay::stop() {
  if (stopped_) return;
  stopped_ = true;
  core_.stop();
  if (!waiting_) return close_devices();
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(stop_, &one, sizeof one);  // ends the wait, which closes the devices
}

void TunRelay::close_devices() {
  boost::system::error_code ignored;
  a_.close(ignored);
  b_.close(ignored);
  ready_.close(ignored);
}

void TunRelay::wait_for_packets() {
  waiting_ = true;
  ready_.async_wait(asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
    waiting_ = false;
    if (stopped_) return close_devices();
    if (ec) {
      // Nothing can be relayed without the wait: say so rather than go quiet.
      errors_.receive_errors += 1;
      spdlog::error("netem tun: waiting for packets failed ({}): the relay stops relaying", ec.message());
      return;
    }
    // The next wait first, then the reads: Asio's epoll reactor registers the
    // set edge-triggered, so an edge taken while no wait was queued is gone;
    // whatever it announced is read below, after the wait is in place.
    wait_for_packets();
    drain();
  });
}

void TunRelay::drain() {
  const bool more_up = drain(a_, true);
  const bool more_down = drain(b_, false);
  if ((more_up || more_down) && !drain_posted_) {
    // A burst's worth from each device, then the loop's other work, then more.
    drain_posted_ = true;
    asio::post(ready_.get_executor(), [this] {
      drain_posted_ = false;
      if (!stopped_) drain();
    });
  }
}

// Reads up to a burst of packets (one read is one IP packet); true when the
// device may have more.
bool TunRelay::drain(asio::posix::stream_descriptor& from, bool up) {
  constexpr int kBurst = 64;
  if (!from.is_open()) return false;
  for (int i = 0; i < kBurst; ++i) {
    boost::system::error_code ec;
    const std::size_t n = from.read_some(asio::buffer(buffer_), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again || ec == asio::error::interrupted) return false;
    if (ec) {
      // A device that fails a read would stay ready and fail again: it leaves the set.
      errors_.receive_errors += 1;
      ::epoll_ctl(ready_.native_handle(), EPOLL_CTL_DEL, from.native_handle(), nullptr);
      boost::system::error_code ignored;
      from.close(ignored);
      return false;
    }
    std::vector<std::byte> packet(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n));
    if (up) {
      core_.submit_up(std::move(packet), 0);
    } else {
      core_.submit_down(std::move(packet), 0);
    }
  }
  return true;
}

}  // namespace volley::netem
