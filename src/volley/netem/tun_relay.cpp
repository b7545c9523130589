#include <volley/netem/tun_relay.hpp>

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

TunRelay::TunRelay(asio::io_context& loop, int fd_a, int fd_b, const Impairment& up, const Impairment& down,
                   std::uint64_t seed)
    : a_(loop, fd_a),
      b_(loop, fd_b),
      buffer_a_(65536),
      buffer_b_(65536),
      core_(
          loop, up, down, seed,
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

void TunRelay::start() {
  read(a_, buffer_a_, true);
  read(b_, buffer_b_, false);
}

void TunRelay::stop() {
  stopped_ = true;
  core_.stop();
  boost::system::error_code ignored;
  a_.close(ignored);
  b_.close(ignored);
}

void TunRelay::read(asio::posix::stream_descriptor& from, std::vector<std::byte>& buffer, bool up) {
  // One read is one IP packet.
  from.async_read_some(asio::buffer(buffer), [this, &from, &buffer, up](const boost::system::error_code& ec,
                                                                          std::size_t n) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      errors_.receive_errors += 1;
      if (ec == asio::error::eof || ec == asio::error::bad_descriptor) return;
    } else {
      std::vector<std::byte> packet(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
      if (up) {
        core_.submit_up(std::move(packet), 0);
      } else {
        core_.submit_down(std::move(packet), 0);
      }
    }
    read(from, buffer, up);
  });
}

}  // namespace volley::netem
