#pragma once
// `--metrics ADDR:PORT` for the long-running server programs: a Prometheus
// endpoint (/metrics, /healthz) on the program's worker loops, announced on
// stdout as "metrics http ADDRESS:PORT" after the listening line, stopped
// with the server. The numbers come from each worker loop's own state (one
// post per loop per scrape), so they equal the final report's once the
// traffic has ended, and cost the traffic nothing between scrapes.
#include <cstdint>
#include <memory>
#include <string>

#include <volley/http/metrics_endpoint.hpp>
#include <volley/metrics/prometheus.hpp>
#include <volley/net/server.hpp>
#include <volley/net/session.hpp>

#include "tls_flags.hpp"

namespace CLI {
class App;
}

namespace volley::tools {

struct MetricsFlags {
  std::string at;  // ADDRESS:PORT; empty: no endpoint
};

// Adds --metrics to `cmd` (checked: a numeric address and a port).
void add_metrics_flag(CLI::App& cmd, MetricsFlags& flags);

class MetricsService {
 public:
  // Binds now when asked for (throws when the address is taken). Accepts on
  // the server's control loop, where start() and stop() are called too, and
  // serves each scrape on a worker loop.
  MetricsService(net::Server& server, const MetricsFlags& flags, http::MetricsEndpoint::Collect collect);
  // From the server's on_ready (after the listening line) and on_stop.
  void start();
  void stop();

 private:
  std::unique_ptr<http::MetricsEndpoint> endpoint_;
};

// The server's own counters: connections refused for want of descriptors,
// over the connection limit, failed handshakes, aborted at shutdown.
void write_server_metrics(metrics::PrometheusText& out, const net::Server& server, const WebSocketFlags& ws);

// What every session-based server reports: sessions opened and open, closes
// by reason, messages and heartbeats each way, protocol errors, high-water events.
struct SessionTotals {
  std::uint64_t opened = 0;
  std::uint64_t open = 0;
  net::SessionStats stats;
  std::uint64_t closes[net::CloseReason::kKinds] = {};
  std::uint64_t unsent_bytes = 0;

  SessionTotals& operator+=(const SessionTotals& o) noexcept;
};
void write_session_metrics(metrics::PrometheusText& out, const SessionTotals& totals);

}  // namespace volley::tools
