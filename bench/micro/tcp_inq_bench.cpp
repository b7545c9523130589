// What TCP_INQ's count costs a receive. A connection that waits on its epoll
// edge without re-arming (src/volley/net/edge_read_wait.hpp) turns TCP_INQ on
// and reads with recvmsg and room for one control message: the kernel then
// says with every read how much it left, so a short read is known to have
// emptied the socket without one more read that would say EAGAIN. That saves
// a system call per message of CPU, but the count is work inside the very read
// that a round trip waits for. Measured here: one 32-byte message sent on a
// loopback TCP connection, then received with recvmsg, the receive alone
// timed, with the count (TCP_INQ on, a control buffer) and without (off, none),
// and with TCP_INQ on but no room for the count (what a busy-polling
// connection's plain recv paid while its socket kept the edge wait's setting).
// BENCHMARKS.md ("A spinning socket without the kernel's count") has the figures.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>

#include <benchmark/benchmark.h>

namespace {

struct LoopbackPair {
  int listener = -1, client = -1, server = -1;
  LoopbackPair() {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0)
      return;
    client = ::socket(AF_INET, SOCK_STREAM, 0);
    if (client < 0 || ::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return;
    server = ::accept(listener, nullptr, nullptr);
    const int on = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  ~LoopbackPair() {
    for (const int fd : {listener, client, server})
      if (fd >= 0) ::close(fd);
  }
  bool ok() const { return server >= 0; }
};

void BM_Receive32(benchmark::State& state) {
  const bool count = state.range(0) == 1;
  LoopbackPair pair;
  const int inq = state.range(0) != 0 ? 1 : 0;
  if (!pair.ok() || ::setsockopt(pair.server, IPPROTO_TCP, TCP_INQ, &inq, sizeof inq) != 0) {
    state.SkipWithError("no loopback TCP connection with TCP_INQ");
    return;
  }
  std::byte message[32]{};
  std::byte buffer[64 * 1024];
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))];
  for (auto _ : state) {
    if (::send(pair.client, message, sizeof message, 0) != static_cast<ssize_t>(sizeof message)) {
      state.SkipWithError("send failed");
      break;
    }
    iovec piece{buffer, sizeof buffer};
    msghdr header{};
    header.msg_iov = &piece;
    header.msg_iovlen = 1;
    if (count) {
      header.msg_control = control;
      header.msg_controllen = sizeof control;
    }
    const auto start = std::chrono::steady_clock::now();
    const ssize_t n = ::recvmsg(pair.server, &header, 0);
    const auto stop = std::chrono::steady_clock::now();
    if (n != static_cast<ssize_t>(sizeof message)) {
      state.SkipWithError("short receive");
      break;
    }
    state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
  }
}

// 0: TCP_INQ off, no control buffer; 1: on, with one; 2: on, without.
BENCHMARK(BM_Receive32)->ArgName("count")->Arg(0)->Arg(1)->Arg(2)->UseManualTime()->Repetitions(5);

}  // namespace

BENCHMARK_MAIN();
