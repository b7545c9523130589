// A TCP echo server: every byte a client sends comes back.
// Usage: echo_server [PORT]   (0 or none: any free port). Stop it with Ctrl-C.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <volley/net/server.hpp>

namespace net = volley::net;

// The protocol of one connection. It lives on that connection's loop, so it needs no locks.
class Echo final : public net::StreamHandler {
 public:
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_data(net::TcpConnection& connection, std::size_t n) override {
    connection.send(std::span(buffer_).first(n));  // copied into the write queue
  }
  void on_close(net::TcpConnection&, const net::CloseReason&) override {}

 private:
  std::array<std::byte, 64 * 1024> buffer_;
};

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 0);
  net::Server server({.bind = "127.0.0.1", .port = port, .threads = 2});
  server.listen([](std::size_t /*worker*/) { return std::make_unique<Echo>(); });
  server.on_ready([&] {
    std::printf("listening tcp 127.0.0.1:%u\n", server.port());
    std::fflush(stdout);
  });
  server.run();  // until SIGINT or SIGTERM; then every connection is closed gracefully
  std::printf("stopped\n");
}
