// UDP load for relay benchmarks, plain sockets only (no Volley code):
//   udp_load echo PORT SECONDS              echo every datagram back, for SECONDS
//   udp_load flood PORT SECONDS WINDOW SIZE keep WINDOW datagrams in flight; prints datagrams/s
//   udp_load ping PORT COUNT SIZE           one at a time; prints round-trip percentiles
//   udp_load blast PORT SECONDS SIZE        send as fast as the socket takes (sendmmsg, 32 a call)
//   udp_load sink PORT SECONDS              count what arrives (recvmmsg); datagrams/s from the first to the last
// Each prints one JSON line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../raw/loopback.hpp"

namespace {

using Clock = std::chrono::steady_clock;

using bench::loopback;

int udp_socket(int bind_port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  const int big = 8 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  sockaddr_in a = loopback(bind_port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("udp_load: bind");
    std::exit(1);
  }
  return fd;
}

bool wait_readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) > 0;
}

int echo(int port, double seconds) {
  const int fd = udp_socket(port);
  std::vector<char> buf(65536);
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  unsigned long long n = 0;
  while (Clock::now() < end) {
    if (!wait_readable(fd, 50)) continue;
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t r = ::recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (r < 0) continue;
    ::sendto(fd, buf.data(), static_cast<size_t>(r), 0, reinterpret_cast<sockaddr*>(&from), len);
    ++n;
  }
  std::printf("{\"mode\":\"echo\",\"echoed\":%llu}\n", n);
  return 0;
}

int flood(int port, double seconds, int window, int size) {
  const int fd = udp_socket(0);
  const sockaddr_in to = loopback(port);
  std::vector<char> out(static_cast<size_t>(size), 'x'), in(65536);
  unsigned long long sent = 0, received = 0;
  int outstanding = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
    while (outstanding < window) {
      ::sendto(fd, out.data(), out.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
      ++sent;
      ++outstanding;
    }
    if (!wait_readable(fd, 100)) {
      outstanding = 0;  // lost somewhere: refill the window
      continue;
    }
    while (::recv(fd, in.data(), in.size(), MSG_DONTWAIT) > 0) {
      ++received;
      --outstanding;
    }
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("{\"mode\":\"flood\",\"sent\":%llu,\"received\":%llu,\"seconds\":%.6f,\"round_trips_per_s\":%.1f}\n", sent,
              received, secs, static_cast<double>(received) / secs);
  return 0;
}

int ping(int port, int count, int size) {
  const int fd = udp_socket(0);
  const sockaddr_in to = loopback(port);
  std::vector<char> out(static_cast<size_t>(size), 'p'), in(65536);
  std::vector<double> rtt_us;
  for (int i = 0; i < count; ++i) {
    const auto t0 = Clock::now();
    ::sendto(fd, out.data(), out.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    if (!wait_readable(fd, 1000)) continue;
    ::recv(fd, in.data(), in.size(), 0);
    rtt_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(rtt_us.begin(), rtt_us.end());
  auto pct = [&](double p) { return rtt_us.empty() ? 0.0 : rtt_us[std::min(rtt_us.size() - 1, static_cast<size_t>(p / 100 * static_cast<double>(rtt_us.size())))]; };
  std::printf("{\"mode\":\"ping\",\"count\":%zu,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}\n",
              rtt_us.size(), pct(50), pct(90), pct(99), rtt_us.empty() ? 0.0 : rtt_us.back());
  return 0;
}

int blast(int port, double seconds, int size) {
  const int fd = udp_socket(0);
  const sockaddr_in to = loopback(port);
  constexpr int kBatch = 32;
  std::vector<char> out(static_cast<size_t>(size), 'b');
  std::vector<mmsghdr> h(kBatch);
  std::vector<iovec> iov(kBatch);
  for (int i = 0; i < kBatch; ++i) {
    iov[static_cast<size_t>(i)] = {out.data(), out.size()};
    h[static_cast<size_t>(i)] = {};
    h[static_cast<size_t>(i)].msg_hdr.msg_iov = &iov[static_cast<size_t>(i)];
    h[static_cast<size_t>(i)].msg_hdr.msg_iovlen = 1;
    h[static_cast<size_t>(i)].msg_hdr.msg_name = const_cast<sockaddr_in*>(&to);
    h[static_cast<size_t>(i)].msg_hdr.msg_namelen = sizeof to;
  }
  unsigned long long sent = 0;
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
    const int n = ::sendmmsg(fd, h.data(), kBatch, 0);
    if (n > 0) sent += static_cast<unsigned long long>(n);
  }
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("{\"mode\":\"blast\",\"sent\":%llu,\"seconds\":%.6f,\"sent_per_s\":%.1f}\n", sent, secs,
              static_cast<double>(sent) / secs);
  return 0;
}

int sink(int port, double seconds) {
  const int fd = udp_socket(port);
  constexpr int kBatch = 64;
  std::vector<char> in(static_cast<size_t>(kBatch) * 2048);
  std::vector<mmsghdr> h(kBatch);
  std::vector<iovec> iov(kBatch);
  for (int i = 0; i < kBatch; ++i) {
    iov[static_cast<size_t>(i)] = {in.data() + i * 2048, 2048};
    h[static_cast<size_t>(i)] = {};
    h[static_cast<size_t>(i)].msg_hdr.msg_iov = &iov[static_cast<size_t>(i)];
    h[static_cast<size_t>(i)].msg_hdr.msg_iovlen = 1;
  }
  unsigned long long received = 0;
  Clock::time_point first{}, last{};
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
    if (!wait_readable(fd, 50)) continue;
    const int n = ::recvmmsg(fd, h.data(), kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) continue;
    if (received == 0) first = Clock::now();
    received += static_cast<unsigned long long>(n);
    last = Clock::now();
  }
  const double secs = received > 1 ? std::chrono::duration<double>(last - first).count() : 0.0;
  std::printf("{\"mode\":\"sink\",\"received\":%llu,\"seconds\":%.6f,\"received_per_s\":%.1f}\n", received, secs,
              secs > 0 ? static_cast<double>(received) / secs : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "echo" && argc == 4) return echo(std::atoi(argv[2]), std::atof(argv[3]));
  if (mode == "flood" && argc == 6) return flood(std::atoi(argv[2]), std::atof(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]));
  if (mode == "ping" && argc == 5) return ping(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]));
  if (mode == "blast" && argc == 5) return blast(std::atoi(argv[2]), std::atof(argv[3]), std::atoi(argv[4]));
  if (mode == "sink" && argc == 4) return sink(std::atoi(argv[2]), std::atof(argv[3]));
  std::fprintf(stderr, "usage: udp_load echo PORT SECONDS | flood PORT SECONDS WINDOW SIZE | ping PORT COUNT SIZE | blast PORT SECONDS SIZE | sink PORT SECONDS\n");
  return 2;
}
