// Raw baseline for the HTTP request-rate benchmark: a minimal epoll server
// with plain sockets and no Volley code that answers every request head
// ("\r\n\r\n") with the same fixed response Volley's HTTP example sends for
// GET /hello (same bytes). It parses nothing else: what any HTTP server must
// at least do per request. THREADS threads, each its own epoll loop on its own
// SO_REUSEPORT listener; level-triggered, non-blocking.
//   raw_http_server PORT [THREADS]      (default 2 threads) runs until SIGINT/SIGTERM
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "loopback.hpp"

namespace {

std::atomic<bool> stop{false};

constexpr std::string_view kResponse =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 18\r\n\r\nhello from volley\n";

struct Conn {
  std::string input;   // bytes of a head not yet complete
  std::string output;  // responses the client has not taken yet
  std::size_t offset = 0;
};

void serve(int listener) {
  const int ep = ::epoll_create1(0);
  epoll_event ev{EPOLLIN, {.fd = listener}};
  ::epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
  std::unordered_map<int, Conn> conns;
  std::vector<char> buf(64 * 1024);
  epoll_event events[256];
  const auto flush = [](int fd, Conn& c) {
    while (c.offset < c.output.size()) {
      const ssize_t w = ::send(fd, c.output.data() + c.offset, c.output.size() - c.offset, MSG_NOSIGNAL);
      if (w < 0) return errno == EAGAIN;
      c.offset += static_cast<std::size_t>(w);
    }
    c.output.clear();
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
      bool ok = true;
      if (events[i].events & EPOLLOUT) {
        ok = flush(fd, c);
      } else {
        const ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
        if (r == 0 || (r < 0 && errno != EAGAIN)) ok = false;
        if (r > 0) {
          c.input.append(buf.data(), static_cast<std::size_t>(r));
          std::size_t end = 0;
          for (std::size_t at; (at = c.input.find("\r\n\r\n", end)) != std::string::npos; end = at + 4)
            c.output += kResponse;
          c.input.erase(0, end);
          ok = flush(fd, c);
        }
      }
      if (!ok) {
        ::close(fd);
        conns.erase(fd);
        continue;
      }
      epoll_event cev{static_cast<std::uint32_t>(c.output.empty() ? EPOLLIN : EPOLLOUT), {.fd = fd}};
      ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &cev);
    }
  }
  for (auto& [fd, c] : conns) ::close(fd);
  ::close(ep);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: raw_http_server PORT [THREADS]\n");
    return 2;
  }
  const int threads = argc == 3 ? std::atoi(argv[2]) : 2;
  std::signal(SIGINT, [](int) { stop = true; });
  std::signal(SIGTERM, [](int) { stop = true; });
  std::vector<int> listeners;
  for (int i = 0; i < threads; ++i) listeners.push_back(bench::reuseport_listener(std::atoi(argv[1]), "raw_http_server: bind"));
  std::vector<std::thread> pool;
  for (int l : listeners) pool.emplace_back(serve, l);
  for (auto& t : pool) t.join();
  for (int l : listeners) ::close(l);
  return 0;
}
