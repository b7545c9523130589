#pragma once
// A blocking loopback TCP client for misbehaving on purpose; every read is bounded.
// Every call goes on after EINTR: a thread that submitted io_uring requests
// (Asio's io_uring backend runs a listen() made on this thread that way) is
// interrupted when their completions run, and a blocking call there fails with
// EINTR although nothing is wrong.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

namespace volley::test {

class RawClient {
 public:
  // `receive_buffer` > 0: the socket's receive buffer, set before connecting
  // (so the kernel holds little of what a peer sends while the test reads nothing).
  explicit RawClient(int port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && !connected_after_interrupt())
      throw std::runtime_error("connect failed");
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawClient() { close(); }
  int fd() const noexcept { return fd_; }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void send(std::span<const std::byte> bytes) const {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("send failed");
      done += static_cast<std::size_t>(n);
    }
  }
  // Reads exactly n bytes; fewer when the peer closes or 5 s pass.
  std::vector<std::byte> read(std::size_t n) const {
    std::vector<std::byte> out(n);
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    out.resize(got);
    return out;
  }
  // What one receive returns (up to `max` bytes; empty at the end, or after 5 s of nothing).
  std::vector<std::byte> read_some(std::size_t max) const {
    std::vector<std::byte> out(max);
    ssize_t r;
    do {
      r = ::recv(fd_, out.data(), max, 0);
    } while (r < 0 && errno == EINTR);
    out.resize(r > 0 ? static_cast<std::size_t>(r) : 0);
    return out;
  }
  // True when a read would not wait (bytes, the end, or an error are there).
  bool readable() const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
  // True when the peer closed the connection (EOF or reset) within 5 s.
  bool peer_closed() const {
    std::byte b;
    ssize_t r;
    do {
      r = ::recv(fd_, &b, 1, 0);
    } while (r < 0 && errno == EINTR);
    return r == 0 || (r < 0 && errno == ECONNRESET);
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Sends our end of stream, keeps reading: peer_closed() then waits for the
  // server to have seen it and closed its side.
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  // Ends both directions at once: a send blocked on a peer that stopped
  // reading fails instead of waiting for ever.
  void shutdown_both() { ::shutdown(fd_, SHUT_RDWR); }
  // Closes with a reset (RST) instead of an orderly end (FIN).
  void reset() {
    const linger abort{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
    close();
  }

 private:
  // A connect interrupted by a signal goes on in the kernel: wait for it.
  bool connected_after_interrupt() const {
    if (errno != EINTR) return false;
    pollfd p{fd_, POLLOUT, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, 5000);
    } while (ready < 0 && errno == EINTR);
    int error = 0;
    socklen_t length = sizeof error;
    return ready == 1 && ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
  }

  int fd_ = -1;
};

}  // namespace volley::test
