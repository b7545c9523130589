#include "metrics_service.hpp"
#include "output.hpp"

#include <CLI/CLI.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "endpoint.hpp"

namespace volley::tools {

void add_metrics_flag(CLI::App& cmd, MetricsFlags& flags) {
  cmd.add_option("--metrics", flags.at,
                 "Serve /metrics (Prometheus text format) and /healthz over HTTP on ADDRESS:PORT (port 0: any free "
                 "one, printed as \"metrics http ADDRESS:PORT\")")
      ->option_text("ADDRESS:PORT")
      ->check([](const std::string& text) -> std::string {
        return parse_udp_endpoint(text) ? std::string{} : "expected ADDRESS:PORT, e.g. 127.0.0.1:9100";
      });
}

MetricsService::MetricsService(net::Server& server, const MetricsFlags& flags, http::MetricsEndpoint::Collect collect) {
  if (flags.at.empty()) return;
  const auto at = parse_udp_endpoint(flags.at);  // checked by the flag
  endpoint_ = std::make_unique<http::MetricsEndpoint>(server.control_loop(), server.workers(),
                                                      boost::asio::ip::tcp::endpoint(at->address(), at->port()),
                                                      std::move(collect));
  server.on_drain([endpoint = endpoint_.get()] { endpoint->set_draining(); });
}

void MetricsService::start() {
  if (!endpoint_) return;
  endpoint_->start();
  const auto local = endpoint_->local_endpoint();
  tools::print("metrics http {}:{}\n", local.address().to_string(), local.port());
  std::fflush(stdout);
  spdlog::info("metrics at http://{}:{}/metrics", local.address().to_string(), local.port());
}

void MetricsService::stop() {
  if (endpoint_) endpoint_->shutdown();
}

void write_server_metrics(metrics::PrometheusText& out, const net::Server& server, const WebSocketFlags& ws) {
  out.family("volley_connections_refused_total", "counter",
             "Connections accepted and closed at once because the process was out of file descriptors.");
  out.sample("volley_connections_refused_total", static_cast<double>(server.refused_connections()));
  out.family("volley_connections_over_limit_total", "counter",
             "Connections accepted and closed at once because the connection limit was reached.");
  out.sample("volley_connections_over_limit_total", static_cast<double>(server.over_limit_connections()));
  out.family("volley_handshake_failures_total", "counter",
             "Connections whose transport handshake (TLS) failed or missed its deadline.");
  out.sample("volley_handshake_failures_total", static_cast<double>(server.handshake_failures()));
  out.family("volley_handshakes_total", "counter", "Transport handshakes (TLS, WebSocket upgrade) finished.");
  out.sample("volley_handshakes_total", static_cast<double>(server.handshakes()));
  out.family("volley_tls_resumed_handshakes_total", "counter",
             "TLS handshakes that resumed a session the client was issued before (no certificate sent).");
  out.sample("volley_tls_resumed_handshakes_total", static_cast<double>(server.resumed_handshakes()));
  out.family("volley_websocket_floods_total", "counter",
             "WebSocket peers closed with 1008 for frames that carry nothing or pings beyond the allowed rate.");
  out.sample("volley_websocket_floods_total", static_cast<double>(ws.stats->floods.load(std::memory_order_relaxed)));
}

namespace {
// Label values in the metric style (the report's keys are words).
const char* reason_label(net::CloseReason::Kind kind) noexcept {
  using K = net::CloseReason::Kind;
  switch (kind) {
    case K::peer_closed: return "peer_closed";
    case K::io_error: return "io_error";
    case K::protocol_error: return "protocol_error";
    case K::local_close: return "local_close";
    case K::shutdown: return "shutdown";
    case K::heartbeat_timeout: return "heartbeat_timeout";
    case K::idle_timeout: return "idle_timeout";
    case K::slow_consumer: return "slow_consumer";
    case K::handshake_failed: return "handshake_failed";
    case K::peer_going_away: return "peer_going_away";
  }
  return "other";
}
}  // namespace

SessionTotals& SessionTotals::operator+=(const SessionTotals& o) noexcept {
  opened += o.opened;
  open += o.open;
  stats += o.stats;
  for (std::size_t k = 0; k < net::CloseReason::kKinds; ++k) closes[k] += o.closes[k];
  unsent_bytes += o.unsent_bytes;
  return *this;
}

void write_session_metrics(metrics::PrometheusText& out, const SessionTotals& t) {
  const auto counter = [&](const char* name, const char* help, std::uint64_t v) {
    out.family(name, "counter", help);
    out.sample(name, static_cast<double>(v));
  };
  counter("volley_sessions_opened_total", "Sessions opened.", t.opened);
  out.family("volley_sessions_open", "gauge", "Sessions open now.");
  out.sample("volley_sessions_open", static_cast<double>(t.open));
  out.family("volley_sessions_closed_total", "counter", "Sessions ended, by reason.");
  for (std::size_t k = 0; k < net::CloseReason::kKinds; ++k)
    out.sample("volley_sessions_closed_total", {{"reason", reason_label(static_cast<net::CloseReason::Kind>(k))}},
               static_cast<double>(t.closes[k]));
  counter("volley_messages_received_total", "Messages decoded from peers.", t.stats.messages_in);
  counter("volley_messages_sent_total", "Messages queued for peers.", t.stats.messages_out);
  counter("volley_heartbeats_received_total", "Keepalive frames received.", t.stats.heartbeats_in);
  counter("volley_heartbeats_sent_total", "Keepalive frames sent.", t.stats.heartbeats_out);
  counter("volley_goodbyes_sent_total", "Goodbye frames sent to peers while draining.", t.stats.goodbyes_out);
  counter("volley_goodbyes_received_total", "Goodbye frames received from draining peers.", t.stats.goodbyes_in);
  counter("volley_protocol_errors_total", "Frames rejected by the decoder.", t.stats.protocol_errors);
  counter("volley_refused_sends_total", "Sends refused (over high water, closed, unframeable).", t.stats.refused_sends);
  counter("volley_high_water_events_total", "Times a session's output queue crossed its high-water mark.",
          t.stats.high_water_events);
  counter("volley_unsent_bytes_total", "Bytes accepted for sending that never reached the kernel (aborted sessions).",
          t.unsent_bytes);
}

}  // namespace volley::tools
