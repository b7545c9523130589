#pragma once
// Serves a program's metrics over HTTP: GET /metrics answers in the
// Prometheus text format (metrics/prometheus.hpp) with what `collect`
// produces, followed by the endpoint's own counts; GET /healthz answers "ok",
// or 503 "draining" once set_draining() said the program is leaving (so a
// load balancer or an orchestrator's readiness probe sends no one new).
// Other paths get 404, other methods 405. Its connections run on the
// program's worker loops beside the traffic, so a scrape costs the traffic a
// little of one loop's time, not a thread.
//
// Peers that hold connections without using them cannot lock a scraper out:
// a request must arrive whole within Limits::request_timeout, and when
// kMaxConnections are open a new connection makes the endpoint let go of the
// one that has been of no use longest (opened or last answered earliest; one
// whose request is being answered is never chosen).
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
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <volley/http/connection_handler.hpp>
#include <volley/net/tcp_server.hpp>

namespace volley::http {

class MetricsEndpoint {
 public:
  // Connections kept open at once; a new one beyond them replaces the idlest.
  static constexpr std::size_t kMaxConnections = 64;
  // Answers queued for a peer that does not read, at most (then the
  // connection stops reading and answering; 10 s so and it is cut).
  static constexpr std::size_t kOutputHighWater = 256 * 1024;

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
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  boost::asio::ip::tcp::endpoint local_endpoint() const { return server_.local_endpoint(); }
  void start() { server_.start(); }
  // Stops accepting and closes its connections (on the accept executor).
  void shutdown() { server_.shutdown(std::chrono::milliseconds(1000)); }

  // From any thread: /healthz says 503 "draining" from now on.
  void set_draining() noexcept { draining_.store(true, std::memory_order_relaxed); }

  std::uint64_t scrapes() const noexcept { return scrapes_.load(std::memory_order_relaxed); }
  const Stats& stats() const noexcept { return stats_; }
  // Connections let go of to make room for a new one.
  std::uint64_t evicted() const noexcept { return evicted_.load(std::memory_order_relaxed); }

 private:
  class Connection;
  void serve(const Request& request, Responder responder);
  // A connection opened (on its loop): registers it, letting go of the idlest when full.
  void admit(Connection& connection);
  void forget(const Connection& connection);
  // The endpoint's own counts, which follow the program's.
  void append_own_metrics(std::string& text) const;

  Collect collect_;
  Handler handler_;
  Limits limits_;
  Stats stats_;
  std::atomic<std::uint64_t> scrapes_{0};
  std::atomic<std::uint64_t> evicted_{0};
  std::atomic<bool> draining_{false};
  std::mutex open_mutex_;  // the worker loops admit and forget concurrently
  std::vector<Connection*> open_;
  net::TcpServer server_;  // last: its connections use the members above
};

}  // namespace volley::http
