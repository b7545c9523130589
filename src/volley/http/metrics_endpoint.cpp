#include <volley/http/metrics_endpoint.hpp>

#include <volley/metrics/prometheus.hpp>

namespace volley::http {

namespace {
// A scraper holds a connection open between scrapes; one that vanishes is let
// go after a minute, one that does not read after 1 MiB of answers.
net::ConnectionLimits endpoint_limits() {
  return {.high_water = 1 << 20,
          .low_water = 0,
          .slow_consumer_timeout = std::chrono::seconds(10),
          .idle_timeout = std::chrono::seconds(60),
          .handshake_timeout = {}};
}
}  // namespace

MetricsEndpoint::MetricsEndpoint(const boost::asio::any_io_executor& accept_executor, net::LoopPool& workers,
                                 const boost::asio::ip::tcp::endpoint& endpoint, Collect collect, Limits limits)
    : collect_(std::move(collect)),
      handler_([this](const Request& request, Responder responder) { serve(request, std::move(responder)); }),
      server_(
          accept_executor, workers, endpoint,
          [this, limits](std::size_t) { return std::make_unique<ConnectionHandler>(handler_, limits, stats_); },
          endpoint_limits()) {
  // Scrapers are few; a flood of connections to this port must not take the
  // descriptors the served traffic needs.
  server_.set_max_connections(kMaxConnections);
}

void MetricsEndpoint::serve(const Request& request, Responder responder) {
  if (request.method != "GET" && request.method != "HEAD") {
    Response r;
    r.status = 405;
    r.body = "only GET and HEAD\n";
    r.headers.emplace_back("Allow", "GET, HEAD");
    return responder(std::move(r));
  }
  const std::string_view path = request.path();
  if (path == "/metrics") {
    scrapes_.fetch_add(1, std::memory_order_relaxed);
    return collect_([responder](std::string text) mutable {
      Response r;
      r.content_type = std::string(metrics::PrometheusText::kContentType);
      r.body = std::move(text);
      responder(std::move(r));
    });
  }
  Response r;
  if (path == "/healthz") {
    r.body = "ok\n";
  } else {
    r.status = 404;
    r.body = "not found: /metrics and /healthz are served here\n";
  }
  responder(std::move(r));
}

}  // namespace volley::http
