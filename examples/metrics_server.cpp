// An echo server that shows its counters to Prometheus while it runs: GET
// /metrics (and /healthz) on a second port. Each worker loop counts its own
// connections and bytes, without locks; a scrape asks every loop for its
// numbers (net::gather) and renders their sum.
// Usage: metrics_server [PORT [METRICS_PORT]]   (0 or none: any free port). Stop it with Ctrl-C.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <volley/http/metrics_endpoint.hpp>
#include <volley/metrics/prometheus.hpp>
#include <volley/net/gather.hpp>
#include <volley/net/server.hpp>

namespace net = volley::net;

// One worker loop's numbers, touched only on that loop.
struct Totals {
  std::uint64_t connections = 0;
  std::uint64_t bytes = 0;
};

class CountingEcho final : public net::StreamHandler {
 public:
  explicit CountingEcho(Totals& totals) : totals_(totals) { ++totals_.connections; }  // made on its worker loop
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_data(net::TcpConnection& connection, std::size_t n) override {
    totals_.bytes += n;
    connection.send(std::span(buffer_).first(n));
  }
  void on_close(net::TcpConnection&, const net::CloseReason&) override {}

 private:
  Totals& totals_;
  std::array<std::byte, 64 * 1024> buffer_;
};

std::string render(const std::vector<Totals>& parts) {
  Totals sum;
  for (const Totals& part : parts) {
    sum.connections += part.connections;
    sum.bytes += part.bytes;
  }
  volley::metrics::PrometheusText out;
  out.family("echo_connections_total", "counter", "Connections accepted.");
  out.sample("echo_connections_total", static_cast<double>(sum.connections));
  out.family("echo_bytes_total", "counter", "Bytes echoed.");
  out.sample("echo_bytes_total", static_cast<double>(sum.bytes));
  return out.text();
}

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 0);
  const auto metrics_port = static_cast<std::uint16_t>(argc > 2 ? std::atoi(argv[2]) : 0);
  net::Server server({.bind = "127.0.0.1", .port = port, .threads = 2});
  std::vector<Totals> totals(server.threads());
  server.listen([&](std::size_t worker) { return std::make_unique<CountingEcho>(totals[worker]); });
  const boost::asio::ip::tcp::endpoint address(boost::asio::ip::make_address("127.0.0.1"), metrics_port);

  volley::http::MetricsEndpoint metrics(server.control_loop(), server.workers(), address,
      [&](volley::http::MetricsEndpoint::Answer answer) {
        net::gather<Totals>(server.workers(), [&](std::size_t w) { return totals[w]; },
                            [answer](std::vector<Totals> parts) { answer(render(parts)); });
      });
  server.on_ready([&] {
    metrics.start();
    std::printf("listening tcp 127.0.0.1:%u\nmetrics http 127.0.0.1:%u\n", server.port(),
                metrics.local_endpoint().port());
    std::fflush(stdout);
  });
  server.on_stop([&] { metrics.shutdown(); });
  server.run();  // until SIGINT or SIGTERM
  std::printf("stopped\n");
}
