#pragma once
// Shared by the plain-socket baseline programs (no Volley code in them).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace bench {

inline sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A non-blocking TCP listener on loopback:PORT with SO_REUSEPORT, so each
// thread of a server can have its own (the kernel spreads connections); exits on failure.
inline int reuseport_listener(int port, const char* program) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a = loopback(port);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 1024) != 0) {
    std::perror(program);
    std::exit(1);
  }
  return listener;
}

// Accepts every pending connection: non-blocking, TCP_NODELAY, registered
// with `ep` for input; `opened(fd)` for each.
template <class Opened>
void accept_all(int listener, int ep, Opened&& opened) {
  const int one = 1;
  for (;;) {
    const int c = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK);
    if (c < 0) return;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    epoll_event cev{EPOLLIN, {.fd = c}};
    ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
    opened(c);
  }
}

// `PROGRAM PORT [THREADS]`: runs serve(port) on THREADS threads (1 by
// default), each with its own listener, and waits for them; 2 on bad usage.
template <class Serve>
int serve_on_threads(int argc, char** argv, const char* usage, Serve serve) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int threads = argc == 3 ? std::atoi(argv[2]) : 1;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(serve, port);
  for (auto& t : pool) t.join();
  return 0;
}

}  // namespace bench
