#include <volley/net/server.hpp>

#include <csignal>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <spdlog/spdlog.h>

#include <volley/net/tcp_connect.hpp>

namespace volley::net {

namespace asio = boost::asio;

Server::Server(ServerOptions options)
    : options_(std::move(options)),
      signals_(control_),
      drain_timer_(control_),
      workers_(options_.threads, options_.busy_poll, options_.design, options_.receive) {
  // Installed here, before anything can announce readiness: a signal that
  // arrives from now on is queued for the wait run() sets up, never fatal.
  if (options_.handle_signals) {
    signals_.add(SIGINT);
    signals_.add(SIGTERM);
    signals_.add(SIGHUP);  // the terminal or session went away: stop as for SIGTERM, with the report
  }
}

Server::~Server() {
  workers_.stop();
  workers_.join();
}

asio::ip::tcp::endpoint Server::endpoint() const {
  return {asio::ip::make_address(options_.bind), options_.port};
}

void Server::listen(HandlerFactory factory) {
  if (const auto unix_address = parse_unix_address(options_.bind))
    tcp_ = std::make_unique<TcpServer>(control_.get_executor(), workers_, *unix_address, options_.unix_mode,
                                       std::move(factory), options_.connection_limits, options_.transport);
  else
    tcp_ = std::make_unique<TcpServer>(control_, workers_, endpoint(), std::move(factory), options_.connection_limits,
                                       options_.transport, ListenOptions{.reuse_port = options_.reuse_port});
  tcp_->set_max_connections(options_.max_connections);
}

asio::any_io_executor Server::make_serial_executor() {
  if (options_.design == Design::thread_pool) return asio::make_strand(workers_.loop(0));
  return control_.get_executor();
}

asio::ip::tcp::endpoint Server::local_endpoint() const {
  return tcp_ ? tcp_->local_endpoint() : asio::ip::tcp::endpoint{};
}

std::string Server::listening_text() const {
  if (tcp_ && tcp_->unix_address()) return tcp_->unix_address()->text();
  return endpoint_text(local_endpoint());
}

void Server::on_ready(std::function<void()> step) { ready_steps_.push_back(std::move(step)); }
void Server::on_stop(std::function<void()> step) { stop_steps_.push_back(std::move(step)); }
void Server::on_drain(std::function<void()> step) { drain_steps_.push_back(std::move(step)); }

void Server::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    stop_signal_ = signo;
    if (signo == SIGTERM && options_.drain_on_sigterm && !draining()) {
      spdlog::info("signal {}: draining: no new connections, peers told to go elsewhere", signo);
      begin_drain();
      wait_for_signal();  // a second signal stops at once
      return;
    }
    spdlog::info("signal {}: closing connections and stopping", signo);
    begin_stop();
  });
}

void Server::run() {
  if (options_.handle_signals) wait_for_signal();
  if (tcp_) tcp_->start();
  workers_.start();
  // A stop() before run() was posted and runs first, ahead of readiness.
  asio::post(control_, [this] {
    if (stopping_) return;
    for (auto& step : ready_steps_) step();
  });
  // Until stop(): a server with no listener and no signals to wait for (its
  // work on the worker loops) has nothing else keeping the control loop up,
  // and a stop() posted to a loop that returned would never release the workers.
  const auto until_stopped = asio::make_work_guard(control_);
  control_.run();
  workers_.join();
}

void Server::stop() {
  asio::dispatch(control_, [this] { begin_stop(); });
}

void Server::drain() {
  asio::dispatch(control_, [this] { begin_drain(); });
}

void Server::begin_drain() {
  if (stopping_ || draining()) return;
  draining_.store(true, std::memory_order_relaxed);
  for (auto& step : drain_steps_) step();
  if (!tcp_) return begin_stop();
  tcp_->drain();
  await_drained(std::chrono::steady_clock::now() + options_.drain_timeout);
}

void Server::await_drained(std::chrono::steady_clock::time_point deadline) {
  // Polled: the connections close on the worker loops, and a count read now
  // and then costs them nothing.
  if (stopping_) return;
  if (tcp_->open_connections() == 0) return begin_stop();
  if (std::chrono::steady_clock::now() >= deadline) {
    spdlog::info("drain: {} connections still open after {} ms: closing them", tcp_->open_connections(),
                 options_.drain_timeout.count());
    return begin_stop();
  }
  drain_timer_.expires_after(std::chrono::milliseconds(10));
  drain_timer_.async_wait([this, deadline](const boost::system::error_code& ec) {
    if (!ec) await_drained(deadline);
  });
}

void Server::begin_stop() {
  if (stopping_) return;
  stopping_ = true;
  for (auto& step : stop_steps_) step();
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  drain_timer_.cancel();
  // Closes each connection gracefully on its own loop; the worker loops then
  // run out of work and return, and run() joins them.
  if (tcp_) tcp_->shutdown(options_.shutdown_timeout);
  workers_.release();
  // The control loop's own work (the acceptor's cancelled wait, timers the
  // caller forgot) must not keep run() waiting.
  control_.stop();
}

}  // namespace volley::net
