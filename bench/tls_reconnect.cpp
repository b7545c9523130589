// A TLS reconnection's time to its first echoed message, with and without
// session resumption (issue 38), on Volley's TLS client: each round connects
// (TCP), does the TLS handshake, sends 32 bytes, waits for them to come back,
// and closes (close_notify, FIN). The two kinds alternate round by round:
// "full" connects without a session to offer; "resumed" offers the one the
// previous resumed round was issued (one TlsSessionCache, as a
// ReconnectingClient's connections share one).
// Usage: tls_reconnect_bench PORT CA_FILE [ROUNDS] [1.2|1.3]   against
// `volley echo-server --proto tls`. Prints one JSON object: each kind's
// median, p90 and mean in microseconds, and how many of its handshakes the
// client saw resumed.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include <volley/net/tcp_connect.hpp>
#include <volley/net/tcp_connection.hpp>
#include <volley/net/tls.hpp>

namespace net = volley::net;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// Sends 32 bytes once open; closes when they are back.
class FirstEcho final : public net::StreamHandler {
 public:
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_open(net::TcpConnection& c) override { c.send(std::span(message_)); }
  void on_data(net::TcpConnection& c, std::size_t n) override {
    got_ += n;
    if (got_ >= message_.size() && !echoed) {
      echoed = Clock::now();
      resumed = c.transport()->resumed_session();
      c.close({net::CloseReason::Kind::local_close, "echoed"});
    }
  }
  void on_close(net::TcpConnection&, const net::CloseReason& reason) override {
    closed = true;
    if (!echoed) failure = reason.detail;
  }

  std::optional<Clock::time_point> echoed;
  bool resumed = false;
  bool closed = false;
  std::string failure;

 private:
  std::array<std::byte, 32> message_{};
  std::array<std::byte, 4096> buffer_{};
  std::size_t got_ = 0;
};

struct Kind {
  const char* name;
  std::shared_ptr<net::TlsSessionCache> sessions;
  std::vector<double> micros;
  int resumed = 0;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PORT CA_FILE [ROUNDS] [1.2|1.3]\n", argv[0]);
    return 2;
  }
  const auto port = static_cast<std::uint16_t>(std::atoi(argv[1]));
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 200;
  const std::string version_text = argc > 4 ? argv[4] : "1.3";
  const auto version = version_text == "1.2" ? net::TlsVersion::tls12 : net::TlsVersion::tls13;
  auto context = net::make_tls_client_context(argv[2], true, version);
  std::array<Kind, 2> kinds{Kind{"full", nullptr, {}, 0},
                            Kind{"resumed", std::make_shared<net::TlsSessionCache>(), {}, 0}};
  net::ConnectionLimits limits;
  limits.handshake_timeout = 5s;
  boost::asio::io_context loop;
  // Round 0 is a warm-up of each kind (and gives the cache its first session).
  for (int round = 0; round <= rounds; ++round) {
    for (Kind& kind : kinds) {
      const Clock::time_point start = Clock::now();
      std::error_code error;
      auto socket = net::connect_tcp(loop, "127.0.0.1", port, 2s, error);
      if (error) {
        std::fprintf(stderr, "cannot connect: %s\n", error.message().c_str());
        return 1;
      }
      auto handler = std::make_unique<FirstEcho>();
      FirstEcho& echo = *handler;
      auto connection = std::make_shared<net::TcpConnection>(
          std::move(socket), std::move(handler), limits,
          net::make_tls_transport(context, net::TlsRole::client, "127.0.0.1", kind.sessions));
      connection->start();
      const Clock::time_point deadline = start + 10s;
      while (!echo.closed && Clock::now() < deadline) {
        loop.restart();
        loop.run_for(10ms);
      }
      if (!echo.echoed) {
        std::fprintf(stderr, "%s round %d: no echo: %s\n", kind.name, round, echo.failure.c_str());
        return 1;
      }
      if (round == 0) continue;
      kind.micros.push_back(std::chrono::duration<double, std::micro>(*echo.echoed - start).count());
      kind.resumed += echo.resumed ? 1 : 0;
    }
  }
  std::printf("{\"rounds\": %d, \"tls\": \"%s\"", rounds, version_text.c_str());
  for (const Kind& k : kinds) {
    double sum = 0;
    for (double m : k.micros) sum += m;
    std::printf(", \"%s\": {\"p50_us\": %.1f, \"p90_us\": %.1f, \"mean_us\": %.1f, \"resumed\": %d}", k.name,
                percentile(k.micros, 0.5), percentile(k.micros, 0.9), sum / static_cast<double>(k.micros.size()),
                k.resumed);
  }
  std::printf("}\n");
  return 0;
}
