#include <volley/http/metrics_endpoint.hpp>

#include <algorithm>

#include <boost/asio/post.hpp>

#include <volley/metrics/prometheus.hpp>

namespace volley::http {

namespace asio = boost::asio;

namespace {
// A scraper holds a connection open between scrapes; one that vanishes is let
// go after a minute, one that does not read after kOutputHighWater of answers
// for 10 s.
net::ConnectionLimits endpoint_limits() {
  return {.high_water = MetricsEndpoint::kOutputHighWater,
          .low_water = 0,
          .stop_reading_when_full = true,
          .slow_consumer_timeout = std::chrono::seconds(10),
          .idle_timeout = std::chrono::seconds(60),
          .handshake_timeout = {}};
}
}  // namespace

// The HTTP handler of one connection, known to the endpoint while it is open.
class MetricsEndpoint::Connection final : public net::StreamHandler {
 public:
  explicit Connection(MetricsEndpoint& endpoint) : endpoint_(endpoint), http_(endpoint.handler_, endpoint.limits_, endpoint.stats_) {}

  std::span<std::byte> read_buffer() override { return http_.read_buffer(); }
  void on_open(net::TcpConnection& connection) override {
    connection_ = connection.weak_from_this();
    endpoint_.admit(*this);
  }
  void on_data(net::TcpConnection& connection, std::size_t n) override { http_.on_data(connection, n); }
  void on_backpressure(net::TcpConnection& connection, bool full) override { http_.on_backpressure(connection, full); }
  void on_close(net::TcpConnection& connection, const net::CloseReason& reason) override {
    http_.on_close(connection, reason);
    endpoint_.forget(*this);
  }

  std::chrono::steady_clock::time_point idle_since() const noexcept { return http_.idle_since(); }
  // Set on its loop before admit(), read under the endpoint's lock after.
  const std::weak_ptr<net::TcpConnection>& connection() const noexcept { return connection_; }

 private:
  MetricsEndpoint& endpoint_;
  ConnectionHandler http_;
  std::weak_ptr<net::TcpConnection> connection_;
};

MetricsEndpoint::MetricsEndpoint(const asio::any_io_executor& accept_executor, net::LoopPool& workers,
                                 const asio::ip::tcp::endpoint& endpoint, Collect collect, Limits limits)
    : collect_(std::move(collect)),
      handler_([this](const Request& request, Responder responder) { serve(request, std::move(responder)); }),
      limits_(limits),
      server_(
          accept_executor, workers, endpoint, [this](std::size_t) { return std::make_unique<Connection>(*this); },
          endpoint_limits()) {
  // A backstop above kMaxConnections: a flood of connections faster than the
  // worker loops can let go of the idlest must not take the descriptors the
  // served traffic needs.
  server_.set_max_connections(2 * kMaxConnections);
}

MetricsEndpoint::~MetricsEndpoint() = default;

void MetricsEndpoint::admit(Connection& connection) {
  std::shared_ptr<net::TcpConnection> idlest;
  {
    const std::scoped_lock lock(open_mutex_);
    if (open_.size() >= kMaxConnections) {
      const auto it = std::min_element(open_.begin(), open_.end(), [](const Connection* a, const Connection* b) {
        return a->idle_since() < b->idle_since();
      });
      // Every one being answered: none is idle, so the newcomer waits its turn among them.
      if ((*it)->idle_since() != std::chrono::steady_clock::time_point::max()) {
        idlest = (*it)->connection().lock();
        open_.erase(it);  // chosen once, though it closes on its own loop later
        evicted_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    open_.push_back(&connection);
  }
  // At once, not gracefully: a graceful close would wait for the peer's end,
  // and a peer that holds connections idle does not send it.
  if (idlest)
    asio::post(idlest->get_executor(), [idlest] {
      idlest->abort({net::CloseReason::Kind::local_close,
                     "the metrics endpoint is full: the connection idle longest makes room for a new one"});
    });
}

void MetricsEndpoint::forget(const Connection& connection) {
  const std::scoped_lock lock(open_mutex_);
  if (const auto it = std::find(open_.begin(), open_.end(), &connection); it != open_.end()) open_.erase(it);
}

void MetricsEndpoint::append_own_metrics(std::string& text) const {
  metrics::PrometheusText out;
  out.family("volley_metrics_requests_total", "counter", "HTTP requests to the metrics endpoint.");
  out.sample("volley_metrics_requests_total", static_cast<double>(stats_.requests.load(std::memory_order_relaxed)));
  out.family("volley_metrics_bad_requests_total", "counter",
             "Requests to the metrics endpoint refused with a 4xx or 5xx status (the connection then closed).");
  out.sample("volley_metrics_bad_requests_total",
             static_cast<double>(stats_.bad_requests.load(std::memory_order_relaxed)));
  out.family("volley_metrics_request_timeouts_total", "counter",
             "Of those, requests not whole within their deadline (408).");
  out.sample("volley_metrics_request_timeouts_total",
             static_cast<double>(stats_.timed_out.load(std::memory_order_relaxed)));
  out.family("volley_metrics_connections_evicted_total", "counter",
             "Metrics connections let go of, idle longest, to make room for a new one.");
  out.sample("volley_metrics_connections_evicted_total", static_cast<double>(evicted()));
  out.family("volley_metrics_connections_over_limit_total", "counter",
             "Metrics connections closed at once because twice the connection limit was open.");
  out.sample("volley_metrics_connections_over_limit_total", static_cast<double>(server_.over_limit_connections()));
  text += out.text();
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
    std::string own;  // taken now: the answer may come after the endpoint is gone
    append_own_metrics(own);
    return collect_([own = std::move(own), responder](std::string text) mutable {
      text += own;
      Response r;
      r.content_type = std::string(metrics::PrometheusText::kContentType);
      r.body = std::move(text);
      responder(std::move(r));
    });
  }
  Response r;
  if (path == "/healthz") {
    const bool draining = draining_.load(std::memory_order_relaxed);
    r.status = draining ? 503 : 200;
    r.body = draining ? "draining\n" : "ok\n";
  } else {
    r.status = 404;
    r.body = "not found: /metrics and /healthz are served here\n";
  }
  responder(std::move(r));
}

}  // namespace volley::http
