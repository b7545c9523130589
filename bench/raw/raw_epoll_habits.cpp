// A raw epoll echo server for one connection of 37-byte checked frames (as
// raw_pingpong's clients send them), with one kernel-visible habit of an
// event-loop library switched on at a time, to price each in system time:
//   raw_epoll_habits PORT [HABITS]
// HABITS, any of:
//   r  recvmsg instead of recv (no control message)
//   i  recvmsg with TCP_INQ's count as a control message
//   m  the same into 16 KiB instead of 37 bytes
//   b  recv into 16 KiB
//   s  sendmsg instead of send
//   o  Asio's event mask (EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLLPRI besides EPOLLIN)
//   f  an eventfd and a timerfd in the epoll set, as Asio's reactor has
//   t  a second thread, asleep
// Serves one connection until it closes (bench/epoll_habits.py runs it).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#ifndef TCP_INQ
#define TCP_INQ 36
#endif

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: raw_epoll_habits PORT [HABITS]\n");
    return 2;
  }
  const std::string habits = argc > 2 ? argv[2] : "";
  const auto has = [&](char c) { return habits.find(c) != std::string::npos; };
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[1])));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener, 1) != 0) {
    std::perror("raw_epoll_habits: listen");
    return 1;
  }
  const int fd = ::accept(listener, nullptr, nullptr);
  if (fd < 0) return 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const bool counted = has('i') || has('m');
  if (counted) ::setsockopt(fd, IPPROTO_TCP, TCP_INQ, &one, sizeof one);
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  const int ep = ::epoll_create1(0);
  if (has('f')) {
    epoll_event wake{};
    wake.events = EPOLLIN | EPOLLERR | EPOLLET;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, ::eventfd(0, EFD_NONBLOCK), &wake);
    epoll_event timer{};
    timer.events = EPOLLIN | EPOLLERR;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK), &timer);
  }
  epoll_event event{};
  event.events = EPOLLIN | EPOLLET | (has('o') ? EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLPRI : 0u);
  event.data.fd = fd;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &event);
  if (has('t')) {
    std::thread([] {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGUSR1);
      int signal = 0;
      sigwait(&set, &signal);
    }).detach();
  }
  static unsigned char buffer[16384];
  const std::size_t want = has('m') || has('b') ? sizeof buffer : 37;
  for (;;) {
    epoll_event ready[128];
    if (::epoll_wait(ep, ready, 128, -1) < 0) continue;
    ssize_t n;
    if (counted || has('r')) {
      iovec piece{buffer, want};
      alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))];
      msghdr message{};
      message.msg_iov = &piece;
      message.msg_iovlen = 1;
      if (counted) {
        message.msg_control = control;
        message.msg_controllen = sizeof control;
      }
      n = ::recvmsg(fd, &message, 0);
    } else {
      n = ::recv(fd, buffer, want, 0);
    }
    if (n == 0) break;
    if (n < 0) continue;
    if (has('s')) {
      iovec piece{buffer, static_cast<std::size_t>(n)};
      msghdr message{};
      message.msg_iov = &piece;
      message.msg_iovlen = 1;
      ::sendmsg(fd, &message, MSG_NOSIGNAL);
    } else {
      ::send(fd, buffer, static_cast<std::size_t>(n), MSG_NOSIGNAL);
    }
  }
  return 0;
}
