// Raw baseline for the UDP echo: blocking recvmmsg, then sendmmsg of the same
// batch back to each sender, with plain sockets and no Volley code.
//   raw_udp_echo PORT [gso]   runs until SIGINT/SIGTERM
// With `gso`, echoes of one sender of one size (the last may be shorter) are
// copied back to back and sent as one buffer the kernel cuts into datagrams
// (UDP_SEGMENT): the baseline for a server that sends that way.
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "loopback.hpp"

namespace {
volatile std::sig_atomic_t stop = 0;
}

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 3 && std::strcmp(argv[2], "gso") == 0)) {
    std::fprintf(stderr, "usage: raw_udp_echo PORT [gso]\n");
    return 2;
  }
  const bool gso = argc == 3;
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
  // For gso: the echoes back to back, and one message per run of them.
  std::vector<char> out(kBatch * kMax);
  std::vector<mmsghdr> runs(kBatch);
  std::vector<iovec> run_iov(kBatch);
  struct Control {
    alignas(cmsghdr) unsigned char bytes[CMSG_SPACE(sizeof(std::uint16_t))];
  };
  std::vector<Control> control(kBatch);
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
    mmsghdr* send = msgs.data();
    int count = n;
    if (gso) {
      std::size_t used = 0;
      count = 0;
      for (int i = 0; i < n;) {
        const std::size_t size = msgs[i].msg_len;
        int j = i;
        std::size_t bytes = 0;
        do {
          std::memcpy(out.data() + used + bytes, iov[j].iov_base, msgs[j].msg_len);
          bytes += msgs[j].msg_len;
          ++j;
        } while (j < n && j - i < 64 && size > 0 && msgs[j - 1].msg_len == size && msgs[j].msg_len > 0 &&
                 msgs[j].msg_len <= size && bytes + msgs[j].msg_len <= 65507 &&
                 std::memcmp(&from[j], &from[i], sizeof from[i]) == 0);
        mmsghdr& r = runs[count];
        std::memset(&r, 0, sizeof r);
        run_iov[count] = {out.data() + used, bytes};
        r.msg_hdr.msg_iov = &run_iov[count];
        r.msg_hdr.msg_iovlen = 1;
        r.msg_hdr.msg_name = &from[i];
        r.msg_hdr.msg_namelen = sizeof from[i];
        if (j - i > 1) {
          r.msg_hdr.msg_control = control[count].bytes;
          r.msg_hdr.msg_controllen = sizeof control[count].bytes;
          cmsghdr* c = CMSG_FIRSTHDR(&r.msg_hdr);
          c->cmsg_level = SOL_UDP;
          c->cmsg_type = UDP_SEGMENT;
          c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
          const auto segment = static_cast<std::uint16_t>(size);
          std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
        }
        used += bytes;
        ++count;
        i = j;
      }
      send = runs.data();
    }
    int done = 0;
    while (done < count) {
      const int s = ::sendmmsg(fd, send + done, static_cast<unsigned>(count - done), 0);
      if (s <= 0) break;
      done += s;
    }
  }
  ::close(fd);
  return 0;
}
