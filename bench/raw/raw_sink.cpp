// Raw baseline sink: accepts connections and reads everything into a large
// buffer, one blocking thread per connection. No Volley code. By default no
// framing either: the most bytes per second this machine's loopback delivers
// to a reader. With `check` it does the gNB target's work the way a
// hand-written program would: walks every frame of the stream, checks its type
// and its length against the type's bounds, and counts frames and bytes per
// type (a frame split across reads is moved to the buffer's front); a bad
// header ends the run with an error.
// Usage: raw_sink PORT CONNECTIONS [check]   (prints one JSON line when all have closed)
#include <arpa/inet.h>
#include <netinet/in.h>
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

// The gNB types (docs/PROTOCOL.md), written out so the baseline has no Volley code.
struct TypeBounds {
  unsigned type;
  std::size_t min_body, max_body;
};
constexpr TypeBounds kTypes[] = {
    {0x1001, 4, 64}, {0x1002, 4, 16}, {0x1003, 6, 12}, {0x1004, 8, 16}, {0x8001, 0, 64 * 1024}};
constexpr std::size_t kHeader = 6;

int index_of(unsigned type) {
  switch (type) {
    case 0x1001: return 0;
    case 0x1002: return 1;
    case 0x1003: return 2;
    case 0x1004: return 3;
    case 0x8001: return 4;
    default: return -1;
  }
}

struct Counts {
  unsigned long long frames[5] = {}, bytes[5] = {};
};

// Reads `fd` to its end, checking and counting every frame; false on a bad header.
bool read_frames(int fd, std::vector<unsigned char>& buf, Counts& c, unsigned long long& n) {
  std::size_t have = 0;
  for (;;) {
    const ssize_t r = ::recv(fd, buf.data() + have, buf.size() - have, 0);
    if (r <= 0) return have == 0;
    n += static_cast<unsigned long long>(r);
    have += static_cast<std::size_t>(r);
    std::size_t at = 0;
    while (have - at >= kHeader) {
      const unsigned char* h = buf.data() + at;
      const int i = index_of((unsigned{h[0]} << 8) | h[1]);
      const std::size_t length = (std::size_t{h[2]} << 24) | (std::size_t{h[3]} << 16) | (std::size_t{h[4]} << 8) | h[5];
      if (i < 0 || length < kTypes[i].min_body || length > kTypes[i].max_body) return false;
      if (have - at < kHeader + length) break;
      ++c.frames[i];
      c.bytes[i] += kHeader + length;
      at += kHeader + length;
    }
    std::memmove(buf.data(), buf.data() + at, have - at);
    have -= at;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc == 4 && std::string(argv[3]) == "check";
  if (argc != 3 && !check) {
    std::fprintf(stderr, "usage: raw_sink PORT CONNECTIONS [check]\n");
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
  std::atomic<unsigned long long> total{0}, frames{0};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  std::chrono::steady_clock::time_point first{};
  for (int i = 0; i < connections; ++i) {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) return 1;
    if (i == 0) first = std::chrono::steady_clock::now();
    readers.emplace_back([fd, check, &total, &frames, &bad] {
      std::vector<unsigned char> buf(256 * 1024);
      unsigned long long n = 0;
      if (check) {
        Counts c;
        if (!read_frames(fd, buf, c, n)) ++bad;
        for (const auto f : c.frames) frames += f;
      } else {
        for (;;) {
          const ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
          if (r <= 0) break;
          n += static_cast<unsigned long long>(r);
        }
      }
      ::close(fd);
      total += n;
    });
  }
  for (auto& t : readers) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - first).count();
  if (bad > 0) {
    std::fprintf(stderr, "raw_sink: %d connection(s) sent a bad frame header or ended mid-frame\n", bad.load());
    return 1;
  }
  std::printf("{\"tool\":\"raw_sink\",\"bytes\":%llu,\"frames\":%llu,\"seconds\":%.6f}\n", total.load(),
              frames.load(), secs);
  return 0;
}
