// Raw baseline sender: builds the same gNB frames as the traffic generator (the
// header is 6 bytes; written out here so the baseline has no Volley code) and
// pushes them with blocking send() for a fixed time, one thread per connection.
// Usage: raw_sender PORT SECONDS CONNECTIONS TYPE:SIZE:FRACTION...
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Spec {
  unsigned type, size, fraction;
};

std::vector<char> build_block(const std::vector<Spec>& specs) {
  // 100 messages in the generator's smooth interleaving, repeated to >= 64 KiB.
  std::vector<long> current(specs.size(), 0);
  std::vector<std::size_t> order;
  for (int slot = 0; slot < 100; ++slot) {
    std::size_t best = 0;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      current[i] += specs[i].fraction;
      if (current[i] > current[best]) best = i;
    }
    current[best] -= 100;
    order.push_back(best);
  }
  std::vector<char> block;
  while (block.size() < 64 * 1024) {
    for (std::size_t i : order) {
      const Spec& s = specs[i];
      const unsigned char header[6] = {static_cast<unsigned char>(s.type >> 8), static_cast<unsigned char>(s.type),
                                       static_cast<unsigned char>(s.size >> 24), static_cast<unsigned char>(s.size >> 16),
                                       static_cast<unsigned char>(s.size >> 8), static_cast<unsigned char>(s.size)};
      block.insert(block.end(), header, header + 6);
      block.insert(block.end(), s.size, 0x5A);
    }
  }
  return block;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: raw_sender PORT SECONDS CONNECTIONS TYPE:SIZE:FRACTION...\n");
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const double seconds = std::atof(argv[2]);
  const int connections = std::atoi(argv[3]);
  std::vector<Spec> specs;
  for (int i = 4; i < argc; ++i) {
    Spec s{};
    if (std::sscanf(argv[i], "%x:%u:%u", &s.type, &s.size, &s.fraction) != 3) return 2;
    specs.push_back(s);
  }
  const std::vector<char> block = build_block(specs);
  std::atomic<unsigned long long> total{0};
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(seconds));
  std::vector<std::thread> senders;
  for (int c = 0; c < connections; ++c) {
    senders.emplace_back([&] {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::perror("raw_sender: connect");
        std::exit(1);
      }
      unsigned long long n = 0;
      while (std::chrono::steady_clock::now() < end) {
        std::size_t off = 0;
        while (off < block.size()) {
          const ssize_t w = ::send(fd, block.data() + off, block.size() - off, MSG_NOSIGNAL);
          if (w <= 0) std::exit(1);
          off += static_cast<std::size_t>(w);
        }
        n += block.size();
      }
      ::close(fd);
      total += n;
    });
  }
  for (auto& t : senders) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"tool\":\"raw_sender\",\"bytes\":%llu,\"seconds\":%.6f}\n", total.load(), secs);
  return 0;
}
