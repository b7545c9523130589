// A TCP echo server: every byte a client sends comes back. Given a socket
// path too, it also serves clients on this host through shared memory, with
// the same handler (docs/GUIDE.md, "Local clients").
// Usage: echo_server [PORT [SOCKET]]   (0 or none: any free port). Stop it with Ctrl-C.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <volley/net/server.hpp>
#include <volley/net/shm.hpp>

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

// Local clients: the same handler on the server's worker loops, over rings in
// memory shared with each client, set up over a Unix socket only the owner may use.
std::unique_ptr<net::TcpServer> serve_local_clients(net::Server& server, const char* path) {
  auto local = std::make_unique<net::TcpServer>(
      server.control_loop().get_executor(), server.workers(), net::UnixAddress{path}, 0600,
      [](std::size_t /*worker*/) { return std::make_unique<Echo>(); }, net::ServerOptions{}.connection_limits,
      [] { return net::make_shm_transport(net::ShmRole::server); });
  server.on_ready([&local = *local, path] {
    local.start();
    std::printf("listening shm unix:%s\n", path);
    std::fflush(stdout);
  });
  server.on_stop([&local = *local] { local.shutdown(); });
  return local;
}

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 0);
  net::Server server({.bind = "127.0.0.1", .port = port, .threads = 2});
  server.listen([](std::size_t /*worker*/) { return std::make_unique<Echo>(); });
  server.on_ready([&] {
    std::printf("listening tcp 127.0.0.1:%u\n", server.port());
    std::fflush(stdout);
  });
  const auto local = argc > 2 ? serve_local_clients(server, argv[2]) : nullptr;  // GUIDE section 6a
  server.run();  // until SIGINT or SIGTERM; then every connection is closed gracefully
  std::printf("stopped\n");
}
