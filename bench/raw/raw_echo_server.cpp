// Raw baseline for the echo benchmarks: a minimal epoll TCP echo server with
// plain sockets and no Volley code. THREADS threads each run their own epoll
// loop on their own SO_REUSEPORT listener (the kernel spreads connections).
// Level-triggered, non-blocking; what a client does not take yet waits in a
// per-connection buffer and the connection is not read until it drains.
//   raw_echo_server PORT [THREADS]      runs until SIGINT/SIGTERM
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unordered_map>
#include <vector>

#include "loopback.hpp"

namespace {

std::atomic<bool> stop{false};

struct Conn {
  std::vector<char> pending;  // bytes read but not yet written back
  std::size_t offset = 0;
};

void serve(int port) {
  const int listener = bench::reuseport_listener(port, "raw_echo_server: bind");
  const int ep = ::epoll_create1(0);
  epoll_event ev{EPOLLIN, {.fd = listener}};
  ::epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
  std::unordered_map<int, Conn> conns;
  std::vector<char> buf(64 * 1024);
  epoll_event events[256];
  const auto drop = [&](int fd) {
    ::close(fd);
    conns.erase(fd);
  };
  // Writes what is pending; false when the connection failed.
  const auto flush = [&](int fd, Conn& c) {
    while (c.offset < c.pending.size()) {
      const ssize_t w = ::send(fd, c.pending.data() + c.offset, c.pending.size() - c.offset, MSG_NOSIGNAL);
      if (w < 0) return errno == EAGAIN;
      c.offset += static_cast<std::size_t>(w);
    }
    c.pending.clear();
    c.offset = 0;
    return true;
  };
  while (!stop.load(std::memory_order_relaxed)) {
    const int n = ::epoll_wait(ep, events, 256, 100);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listener) {
        bench::accept_all(listener, ep, [&](int c) { conns.emplace(c, Conn{}); });
        continue;
      }
      Conn& c = conns[fd];
      if (events[i].events & EPOLLOUT) {
        if (!flush(fd, c)) {
          drop(fd);
          continue;
        }
        if (c.pending.empty()) {
          epoll_event cev{EPOLLIN, {.fd = fd}};
          ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &cev);
        }
        continue;
      }
      const ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
      if (r == 0 || (r < 0 && errno != EAGAIN)) {
        drop(fd);
        continue;
      }
      if (r < 0) continue;
      c.pending.insert(c.pending.end(), buf.data(), buf.data() + r);
      if (!flush(fd, c)) {
        drop(fd);
        continue;
      }
      if (!c.pending.empty()) {  // the client is behind: wait until it can take more
        epoll_event cev{EPOLLOUT, {.fd = fd}};
        ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &cev);
      }
    }
  }
  for (auto& [fd, c] : conns) ::close(fd);
  ::close(listener);
  ::close(ep);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGINT, [](int) { stop = true; });
  std::signal(SIGTERM, [](int) { stop = true; });
  return bench::serve_on_threads(argc, argv, "raw_echo_server PORT [THREADS]", serve);
}
