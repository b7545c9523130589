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

}  // namespace bench
