#pragma once
// Serves a program's metrics over HTTP: GET /metrics answers in the
// Prometheus text format (metrics/prometheus.hpp) with what `collect`
// produces, GET /healthz answers "ok". Other paths get 404, other methods 405.
// Its connections run on the program's worker loops beside the traffic, so a
// scrape costs the traffic a little of one loop's time, not a thread.
//
//   MetricsEndpoint metrics(server.control_loop(), server.workers(), at,
//       [&](MetricsEndpoint::Answer answer) {
//         net::gather<Totals>(server.workers(), snapshot_of_worker, [answer](auto parts) {
//           answer(render(parts));
//         });
//       });
//   metrics.start();      // and metrics.shutdown() from the server's on_stop()
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include <volley/http/connection_handler.hpp>
#include <volley/net/tcp_server.hpp>

namespace volley::http {

class MetricsEndpoint {
 public:
  // Connections open at once; one more is accepted and closed at once.
  static constexpr std::size_t kMaxConnections = 64;

  // Called with the exposition text, from any thread, once per scrape.
  using Answer = std::function<void(std::string text)>;
  // Called on the loop of the scraping connection; answers when it can.
  using Collect = std::function<void(Answer answer)>;

  // Binds and listens now (throws boost::system::system_error when the address
  // is taken). Accepts on `accept_executor` (a loop, or a strand of a thread
  // pool); start() and shutdown() are called there.
  MetricsEndpoint(const boost::asio::any_io_executor& accept_executor, net::LoopPool& workers,
                  const boost::asio::ip::tcp::endpoint& endpoint, Collect collect, Limits limits = {});
  MetricsEndpoint(boost::asio::io_context& accept_loop, net::LoopPool& workers,
                  const boost::asio::ip::tcp::endpoint& endpoint, Collect collect, Limits limits = {})
      : MetricsEndpoint(accept_loop.get_executor(), workers, endpoint, std::move(collect), limits) {}
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const { return server_.local_endpoint(); }
  void start() { server_.start(); }
  // Stops accepting and closes its connections (on the accept executor).
  void shutdown() { server_.shutdown(std::chrono::milliseconds(1000)); }

  std::uint64_t scrapes() const noexcept { return scrapes_.load(std::memory_order_relaxed); }
  const Stats& stats() const noexcept { return stats_; }

 private:
  void serve(const Request& request, Responder responder);

  Collect collect_;
  Handler handler_;
  Stats stats_;
  std::atomic<std::uint64_t> scrapes_{0};
  net::TcpServer server_;  // last: its connections use the members above
};

}  // namespace volley::http
