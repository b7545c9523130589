// Raw baseline for the UDP echo: blocking recvmmsg, then sendmmsg of the same
// batch back to each sender, with plain sockets and no Volley code.
//   raw_udp_echo PORT      runs until SIGINT/SIGTERM
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "loopback.hpp"

namespace {
volatile std::sig_atomic_t stop = 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: raw_udp_echo PORT\n");
    return 2;
  }
  struct sigaction sa{};
  sa.sa_handler = [](int) { stop = 1; };
  ::sigaction(SIGINT, &sa, nullptr);  // no SA_RESTART: the blocked recvmmsg returns EINTR
  ::sigaction(SIGTERM, &sa, nullptr);
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  const int size = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  sockaddr_in a = bench::loopback(std::atoi(argv[1]));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("raw_udp_echo: bind");
    return 1;
  }
  constexpr unsigned kBatch = 64;
  constexpr std::size_t kMax = 65536;
  std::vector<char> data(kBatch * kMax);
  std::vector<mmsghdr> msgs(kBatch);
  std::vector<iovec> iov(kBatch);
  std::vector<sockaddr_in> from(kBatch);
  while (!stop) {
    for (unsigned i = 0; i < kBatch; ++i) {
      iov[i] = {data.data() + i * kMax, kMax};
      std::memset(&msgs[i], 0, sizeof msgs[i]);
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof from[i];
    }
    // Block for the first datagram, then take whatever else is already there.
    const int n = ::recvmmsg(fd, msgs.data(), kBatch, MSG_WAITFORONE, nullptr);
    if (n <= 0) continue;
    for (int i = 0; i < n; ++i) iov[i].iov_len = msgs[i].msg_len;
    int done = 0;
    while (done < n) {
      const int s = ::sendmmsg(fd, msgs.data() + done, static_cast<unsigned>(n - done), 0);
      if (s <= 0) break;
      done += s;
    }
  }
  ::close(fd);
  return 0;
}
