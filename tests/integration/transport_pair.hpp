#pragma once
// Two ends of a connection for testing a StreamTransport on its own, no event
// loop: a non-blocking socket pair, and both ends' handshakes stepped in turn.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include <volley/net/stream_transport.hpp>

namespace volley::test {

class SocketPair {
 public:
  // `server_send_buffer` > 0: the server end's SO_SNDBUF, so that its writes come back short early.
  explicit SocketPair(int server_send_buffer = 0) {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds_) != 0) throw std::runtime_error("socketpair failed");
    for (const int fd : fds_) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (server_send_buffer > 0)
      ::setsockopt(fds_[0], SOL_SOCKET, SO_SNDBUF, &server_send_buffer, sizeof server_send_buffer);
  }
  ~SocketPair() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;
  int server() const { return fds_[0]; }
  int client() const { return fds_[1]; }

 private:
  int fds_[2] = {-1, -1};
};

// Both ends' handshakes, stepped in turn until both are done (bounded): false
// when either failed or they did not finish.
inline bool handshake(net::StreamTransport& a, net::StreamTransport& b) {
  bool a_done = false, b_done = false;
  for (int step = 0; step < 1000 && !(a_done && b_done); ++step) {
    boost::system::error_code ec;
    if (!a_done) a_done = a.handshake(ec) == net::StreamTransport::Wait::none;
    if (ec) return false;
    if (!b_done) b_done = b.handshake(ec) == net::StreamTransport::Wait::none;
    if (ec) return false;
  }
  return a_done && b_done;
}

}  // namespace volley::test
