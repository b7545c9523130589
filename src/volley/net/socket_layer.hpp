#pragma once
// The layer under a ws (not wss) transport: the socket itself.
// Plain send and receive on the descriptor, no buffering of its own.
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <string>

#include <boost/asio/error.hpp>

#include <volley/net/stream_transport.hpp>

namespace volley::net::detail {

class SocketLayer final : public StreamTransport {
 public:
  void attach(int fd) override { fd_ = fd; }
  Wait handshake(boost::system::error_code&) override { return Wait::none; }
  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0) {
      ec = boost::asio::error::eof;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      blocked_ = Wait::read;
      ec = boost::asio::error::would_block;
    } else {
      ec = {errno, boost::system::system_category()};
    }
    return 0;
  }
  std::size_t write_some(std::span<const boost::asio::const_buffer> buffers, boost::system::error_code& ec) override {
    std::array<iovec, 64> iov;  // (only the first `count` are set and read)
    const std::size_t count = std::min(buffers.size(), iov.size());
    for (std::size_t i = 0; i < count; ++i) iov[i] = {const_cast<void*>(buffers[i].data()), buffers[i].size()};
    msghdr message{};
    message.msg_iov = iov.data();
    message.msg_iovlen = count;
    const ssize_t n = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      blocked_ = Wait::write;
      ec = boost::asio::error::would_block;
    } else {
      ec = {errno, boost::system::system_category()};
    }
    return 0;
  }
  Wait blocked_on() const override { return blocked_; }
  bool has_buffered_input() const override { return false; }
  void shutdown_send() override {}
  std::string describe() const override { return "TCP"; }

 private:
  int fd_ = -1;
  Wait blocked_ = Wait::none;
};

}  // namespace volley::net::detail
