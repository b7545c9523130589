// Raw baseline sink: accepts connections and reads everything into a large
// buffer, one blocking thread per connection. No framing, no Volley code: the
// most bytes per second this machine's loopback delivers to a reader.
// Usage: raw_sink PORT CONNECTIONS   (prints one JSON line when all have closed)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: raw_sink PORT CONNECTIONS\n");
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const int connections = std::atoi(argv[2]);
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 128) != 0) {
    std::perror("raw_sink: bind/listen");
    return 1;
  }
  std::atomic<unsigned long long> total{0};
  std::vector<std::thread> readers;
  std::chrono::steady_clock::time_point first{};
  for (int i = 0; i < connections; ++i) {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) return 1;
    if (i == 0) first = std::chrono::steady_clock::now();
    readers.emplace_back([fd, &total] {
      std::vector<char> buf(256 * 1024);
      unsigned long long n = 0;
      for (;;) {
        const ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
        if (r <= 0) break;
        n += static_cast<unsigned long long>(r);
      }
      ::close(fd);
      total += n;
    });
  }
  for (auto& t : readers) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count();
  std::printf("{\"tool\":\"raw_sink\",\"bytes\":%llu,\"seconds\":%.6f}\n", total.load(), secs);
  return 0;
}
