#pragma once
// Loopback UDP helpers for relay tests: an echo server on its own thread and a
// client socket with bounded waits.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace volley::test {

class UdpSocket {
 public:
  UdpSocket() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a = loopback(0);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("bind");
    const int big = 4 << 20;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  }
  ~UdpSocket() { ::close(fd_); }
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  static sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }
  int port() const {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }
  void send_to(int port, const std::vector<std::byte>& data) const {
    const sockaddr_in a = loopback(port);
    ::sendto(fd_, data.data(), data.size(), 0, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  }
  // A datagram, or nullopt after `timeout`; `from` gets the sender.
  std::optional<std::vector<std::byte>> receive(std::chrono::milliseconds timeout, sockaddr_in* from = nullptr) const {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    std::vector<std::byte> buf(65536);
    sockaddr_in src{};
    socklen_t len = sizeof src;
    const ssize_t n = ::recvfrom(fd_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&src), &len);
    if (n < 0) return std::nullopt;
    buf.resize(static_cast<std::size_t>(n));
    if (from) *from = src;
    return buf;
  }
  void reply(const sockaddr_in& to, const std::vector<std::byte>& data) const {
    ::sendto(fd_, data.data(), data.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  }

 private:
  int fd_ = -1;
};

class UdpEchoServer {
 public:
  UdpEchoServer() : thread_([this] {
    while (!stop_) {
      sockaddr_in from{};
      if (auto d = socket_.receive(std::chrono::milliseconds(50), &from)) socket_.reply(from, *d);
    }
  }) {}
  ~UdpEchoServer() {
    stop_ = true;
    thread_.join();
  }
  int port() const { return socket_.port(); }

 private:
  UdpSocket socket_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace volley::test
