// Raw baseline for shared-memory round trips: two processes, one
// single-producer/single-consumer byte ring each way in a shared anonymous
// mapping, both sides spinning. No Volley code, no framing, no checks: the
// least a shared-memory ping-pong does, for Volley's shm transport to be
// given as a ratio of.
//   raw_shm_pingpong SECONDS [SIZE] [SERVER_CPU CLIENT_CPU]
// The server process echoes every byte; the client sends SIZE bytes, spins
// until SIZE bytes came back, and times each round trip. Prints JSON:
// {"size":32,"round_trips":N,"p50_ns":...,"p90_ns":...,"p99_ns":...,"max_ns":...}
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace {

constexpr std::size_t kCapacity = 1 << 16;

struct Ring {
  alignas(64) std::atomic<std::uint64_t> head{0};  // bytes written
  alignas(64) std::atomic<std::uint64_t> tail{0};  // bytes read
  alignas(64) unsigned char data[kCapacity];

  void put(const unsigned char* p, std::size_t n) {
    const std::uint64_t h = head.load(std::memory_order_relaxed);
    while (h + n - tail.load(std::memory_order_acquire) > kCapacity) {
    }
    for (std::size_t i = 0; i < n; ++i) data[(h + i) & (kCapacity - 1)] = p[i];
    head.store(h + n, std::memory_order_release);
  }
  void get(unsigned char* p, std::size_t n) {
    const std::uint64_t t = tail.load(std::memory_order_relaxed);
    while (head.load(std::memory_order_acquire) - t < n) {
    }
    for (std::size_t i = 0; i < n; ++i) p[i] = data[(t + i) & (kCapacity - 1)];
    tail.store(t + n, std::memory_order_release);
  }
};

struct Shared {
  Ring to_server;
  Ring to_client;
  std::atomic<int> stop{0};
};

void pin(const char* cpu) {
  if (cpu == nullptr) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(std::atoi(cpu), &set);
  sched_setaffinity(0, sizeof set, &set);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: raw_shm_pingpong SECONDS [SIZE] [SERVER_CPU CLIENT_CPU]\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const std::size_t size = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 32;
  if (size == 0 || size > 4096) {
    std::fprintf(stderr, "SIZE: 1 to 4096 bytes\n");
    return 2;
  }
  void* at = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (at == MAP_FAILED) return 1;
  auto* shared = new (at) Shared;
  const pid_t server = fork();
  if (server == 0) {
    pin(argc > 4 ? argv[3] : nullptr);
    std::vector<unsigned char> buffer(size);
    while (shared->stop.load(std::memory_order_relaxed) == 0) {
      // Spin for the next message, or the end.
      while (shared->to_server.head.load(std::memory_order_acquire) - shared->to_server.tail.load(std::memory_order_relaxed) <
             size)
        if (shared->stop.load(std::memory_order_relaxed) != 0) _exit(0);
      shared->to_server.get(buffer.data(), size);
      shared->to_client.put(buffer.data(), size);
    }
    _exit(0);
  }
  pin(argc > 4 ? argv[4] : nullptr);
  std::vector<unsigned char> out(size, 'x'), in(size);
  std::vector<std::uint32_t> rtt;
  rtt.reserve(1 << 24);
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (auto now = Clock::now(); now < end;) {
    shared->to_server.put(out.data(), size);
    shared->to_client.get(in.data(), size);
    const auto after = Clock::now();
    if (rtt.size() < rtt.capacity())
      rtt.push_back(static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(after - now).count()));
    now = after;
  }
  shared->stop.store(1);
  waitpid(server, nullptr, 0);
  std::sort(rtt.begin(), rtt.end());
  const auto at_percentile = [&](double p) { return rtt.empty() ? 0u : rtt[static_cast<std::size_t>(p / 100 * (rtt.size() - 1))]; };
  std::printf("{\"size\":%zu,\"round_trips\":%zu,\"p50_ns\":%u,\"p90_ns\":%u,\"p99_ns\":%u,\"max_ns\":%u}\n", size,
              rtt.size(), at_percentile(50), at_percentile(90), at_percentile(99), rtt.empty() ? 0u : rtt.back());
  return 0;
}
