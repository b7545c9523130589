// Raw baseline for round trips: blocking TCP ping-pong with plain sockets, no
// Volley code. By default the frames have the sizes of an RPC Ping (12 + 8
// bytes) and Pong (12 + 17 bytes); PING and PONG set others (a checked frame
// of payload P is P + 5 both ways).
//   raw_pingpong server PORT [PING PONG]           answers one connection until it closes
//   raw_pingpong client PORT SECONDS [PING PONG]   prints round-trip percentiles as JSON
// busy-server and busy-client are the busy-polling twins: non-blocking sockets,
// spinning on recv/send instead of sleeping in the kernel (busy-checked-server
// and busy-checked-client: the same, with checked frames). checked-server and
// checked-client send checked frames and do the protocol's work the way a
// hand-written program would: the sender computes the XOR of the payload into
// the header, the receiver verifies it (a mismatch ends the run with an error).
// The epoll- modes (epoll-server, epoll-checked-client, ..) are the least an
// event loop does: a non-blocking socket registered edge-triggered with epoll,
// and before each message awaited a sleep in epoll_wait, then the read (and
// the write): three system calls per message on each side, as against the
// blocking programs' two. They show what sleeping in epoll rather than in recv
// costs, whatever a library does on top.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loopback.hpp"

namespace {

constexpr std::size_t kPing = 20, kPong = 29;

struct Sizes {
  std::size_t ping = kPing;
  std::size_t pong = kPong;
};

bool busy = false;     // spin on EAGAIN (the socket is non-blocking)
int epoll_fd = -1;     // epoll-: sleep in epoll_wait before each message read (the socket is non-blocking)
bool checked = false;  // frames are checked frames: XOR computed on send, verified on receive

std::uint8_t xor_of(const char* p, std::size_t n) {
  std::uint8_t x = 0;
  for (std::size_t i = 0; i < n; ++i) x ^= static_cast<std::uint8_t>(p[i]);
  return x;
}

// [u24 total][type 1][xor][payload]
void seal(std::vector<char>& frame) {
  const std::size_t total = frame.size();
  frame[0] = static_cast<char>(total >> 16);
  frame[1] = static_cast<char>(total >> 8);
  frame[2] = static_cast<char>(total);
  frame[3] = 1;
  frame[4] = static_cast<char>(xor_of(frame.data() + 5, total - 5));
}

bool intact(const std::vector<char>& frame) {
  return static_cast<std::uint8_t>(frame[4]) == xor_of(frame.data() + 5, frame.size() - 5);
}

void wait_readable() {
  epoll_event ev{};
  while (::epoll_wait(epoll_fd, &ev, 1, -1) < 0 && errno == EINTR) {
  }
}

bool read_exact(int fd, char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && busy && errno == EAGAIN) continue;
    if (r < 0 && epoll_fd >= 0 && errno == EAGAIN) {  // part of a message came: wait for the rest
      wait_readable();
      continue;
    }
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool write_exact(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && busy && errno == EAGAIN) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

void no_delay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (busy || epoll_fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (epoll_fd >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
}

using bench::loopback;

int server(int port, Sizes sizes) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(port);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 4) != 0) {
    std::perror("raw_pingpong: bind");
    return 1;
  }
  const int fd = ::accept(listener, nullptr, nullptr);
  no_delay(fd);
  std::vector<char> in(sizes.ping), out(sizes.pong);
  for (;;) {
    // One message at a time: the last read drained the socket, so the next
    // message raises a new edge; the wait comes first, with no read that
    // would only say EAGAIN.
    if (epoll_fd >= 0) wait_readable();
    if (!read_exact(fd, in.data(), in.size())) break;
    if (checked) {
      if (!intact(in)) {
        std::fprintf(stderr, "raw_pingpong: bad checksum\n");
        return 1;
      }
      if (in.size() == out.size()) {  // an echo: the received frame goes back, its XOR computed again
        seal(in);
        if (!write_exact(fd, in.data(), in.size())) break;
        continue;
      }
      std::memcpy(out.data() + 5, in.data() + 5, std::min(in.size(), out.size()) - 5);
      seal(out);
    } else {
      std::memcpy(out.data(), in.data(), std::min<std::size_t>({4, in.size(), out.size()}));  // echo the sequence, as a reply would
    }
    if (!write_exact(fd, out.data(), out.size())) break;
  }
  ::close(fd);
  return 0;
}

int client(int port, double seconds, Sizes sizes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("raw_pingpong: connect");
    return 1;
  }
  no_delay(fd);
  std::vector<char> out(sizes.ping), in(sizes.pong);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i * 131 + 7);
  std::vector<double> rtt_us;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(seconds));
  while (std::chrono::steady_clock::now() < end) {
    const auto t0 = std::chrono::steady_clock::now();
    if (checked) seal(out);
    if (!write_exact(fd, out.data(), out.size())) return 1;
    if (epoll_fd >= 0) wait_readable();  // the answer takes a while: sleep for it, not for an EAGAIN
    if (!read_exact(fd, in.data(), in.size())) return 1;
    if (checked && !intact(in)) {
      std::fprintf(stderr, "raw_pingpong: bad checksum\n");
      return 1;
    }
    rtt_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  ::close(fd);
  std::sort(rtt_us.begin(), rtt_us.end());
  auto pct = [&](double p) { return rtt_us[std::min(rtt_us.size() - 1, static_cast<std::size_t>(p / 100 * static_cast<double>(rtt_us.size())))]; };
  double sum = 0;
  for (double v : rtt_us) sum += v;
  std::printf("{\"tool\":\"raw_pingpong\",\"round_trips\":%zu,\"mean_us\":%.3f,\"p50_us\":%.3f,\"p99_us\":%.3f,\"max_us\":%.3f}\n",
              rtt_us.size(), sum / static_cast<double>(rtt_us.size()), pct(50), pct(99), rtt_us.back());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode.rfind("busy-", 0) == 0) {
    busy = true;
    mode = mode.substr(5);
  } else if (mode.rfind("epoll-", 0) == 0) {
    epoll_fd = ::epoll_create1(0);
    mode = mode.substr(6);
  }
  if (mode.rfind("checked-", 0) == 0) {
    checked = true;
    mode = mode.substr(8);
  }
  Sizes sizes;
  const auto sizes_at = [&](int i) {
    sizes.ping = std::strtoull(argv[i], nullptr, 10);
    sizes.pong = std::strtoull(argv[i + 1], nullptr, 10);
    return sizes.ping > (checked ? 5u : 0u) && sizes.pong > (checked ? 5u : 0u) && sizes.ping < (1u << 24) &&
           sizes.pong < (1u << 24);
  };
  if (mode == "server" && (argc == 3 || (argc == 5 && sizes_at(3)))) return server(std::atoi(argv[2]), sizes);
  if (mode == "client" && (argc == 4 || (argc == 6 && sizes_at(4))))
    return client(std::atoi(argv[2]), std::atof(argv[3]), sizes);
  std::fprintf(stderr, "usage: raw_pingpong [busy-|epoll-][checked-]server PORT [PING PONG] | [busy-|epoll-][checked-]client PORT SECONDS [PING PONG]\n");
  return 2;
}
