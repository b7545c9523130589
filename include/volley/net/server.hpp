#pragma once
/// @file
/// A TCP server that owns everything a server program needs: the listening
/// socket, the worker loops, SIGINT/SIGTERM/SIGHUP handling and a graceful stop.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/loop_pool.hpp>
#include <volley/net/tcp_server.hpp>

namespace volley::net {

/// How a Server listens and runs.
struct ServerOptions {
  /// Address to listen on: an IP address, or a Unix socket ("unix:/run/svc.sock",
  /// "unix-abstract:svc"; see unix_socket.hpp), where `port` is not used.
  std::string bind = "0.0.0.0";
  std::uint16_t port = 0;        ///< 0: any free port (see Server::port())
  std::size_t threads = 1;       ///< worker loops, one thread each; connections spread round-robin
  bool busy_poll = false;        ///< worker loops spin instead of sleeping in the kernel (a CPU each)
  /// One loop per worker thread (connections stay on theirs), or one loop
  /// run by all of them (each connection on a strand of its own): see LoopPool.
  Design design = Design::loop_per_thread;
  /// How plain TCP connections take their input: readiness from the reactor,
  /// or multishot receives in an io_uring ring per worker loop (see
  /// ReceivePath; where io_uring cannot run, the server says why and uses the reactor).
  ReceivePath receive = ReceivePath::reactor;
  bool handle_signals = true;    ///< SIGINT, SIGTERM and SIGHUP stop the server gracefully
  /// SIGTERM drains (drain()) instead of stopping at once: for a restart
  /// that drops no client. SIGINT and SIGHUP still stop; so does a second
  /// signal while draining.
  bool drain_on_sigterm = false;
  /// How long a drain waits for peers to leave once told to go; then the
  /// stop closes those still there (within shutdown_timeout).
  std::chrono::milliseconds drain_timeout{10000};
  /// How long a stop waits for connections to close gracefully (their queued
  /// bytes flushed) before aborting the rest, so a peer that stopped reading
  /// cannot keep the server from stopping.
  std::chrono::milliseconds shutdown_timeout = TcpServer::kDefaultShutdownDeadline;
  /// Each connection's bound on replies queued for a peer that does not read:
  /// at 4 MiB queued the handler hears on_backpressure (a session refuses
  /// sends) and reading pauses, until it drains to 1 MiB; a peer that keeps a
  /// connection there 10 s is disconnected as a slow consumer. No idle
  /// timeout unless set (`idle_timeout`). A transport's handshake (TLS) must
  /// be done within 5 s.
  ConnectionLimits connection_limits{.high_water = 4 << 20,
                                     .low_water = 1 << 20,
                                     .stop_reading_when_full = true,
                                     .slow_consumer_timeout = std::chrono::seconds(10),
                                     .idle_timeout = {},
                                     .handshake_timeout = std::chrono::seconds(5)};
  /// Each connection's transport: empty for plain TCP; for TLS,
  /// `[&ctx] { return make_tls_transport(ctx, TlsRole::server); }` (volley/net/tls.hpp).
  TcpServer::TransportFactory transport{};
  /// At most this many connections open at once (0: no limit); one more is
  /// accepted and closed at once, and counted (over_limit_connections()).
  std::size_t max_connections = 0;
  /// A Unix socket file's permissions (0660: its owner and group may
  /// connect); -1 leaves what the umask gives.
  int unix_mode = -1;
  /// SO_REUSEPORT: several servers (processes) listen on one port and the
  /// kernel spreads connections among them; each must set it. A new version
  /// starts beside the old, which then stops without refusing anyone.
  bool reuse_port = false;
};

/// One listening TCP server with its own loops: a control loop (accepting,
/// signals, the caller's timers) on the thread that calls run(), and
/// `threads` worker loops on threads of their own. Each connection lives on
/// one worker loop for its whole life, so its handler needs no locks.
///
/// @code
///   volley::net::Server server({.port = 7000, .threads = 2});
///   server.listen([](std::size_t) { return std::make_unique<Echo>(); });
///   server.run();  // until SIGINT, SIGTERM or SIGHUP; then every connection is closed gracefully
/// @endcode
///
/// Readiness: signals are handled from construction on, so a program that
/// announces its port from on_ready() (or after listen()) can be stopped by a
/// signal the instant it says it is ready, and still shuts down cleanly.
class Server {
 public:
  using HandlerFactory = TcpServer::HandlerFactory;

  explicit Server(ServerOptions options = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds and listens now (throws boost::system::system_error when the
  /// address is taken or invalid); each accepted connection gets a
  /// TcpConnection driving the handler `factory` makes on its worker loop.
  void listen(HandlerFactory factory);

  /// Called once on the control loop when the server is ready: listening,
  /// signals handled, worker loops running. The place to announce the port.
  void on_ready(std::function<void()> step);
  /// Called on the control loop when the server stops, before connections
  /// are closed: stop timers, close sockets the server does not know about.
  void on_stop(std::function<void()> step);
  /// Called on the control loop when a drain begins: say "draining" where a
  /// load balancer or an orchestrator asks (a /healthz that answers 503).
  void on_drain(std::function<void()> step);

  /// Runs the server on this thread until stop() or a signal; returns once
  /// every connection has closed and every worker loop has finished.
  void run();
  /// Stops accepting and closes every connection gracefully. Thread-safe,
  /// idempotent, and safe before run() (run() then returns at once).
  void stop();
  /// A graceful hand-over, for a restart: stops accepting (another process on
  /// the same port, reuse_port, takes the new connections), tells every peer
  /// to finish and go elsewhere (StreamHandler::on_drain: a session's goodbye
  /// frame, a WebSocket close 1001, an HTTP Connection: close) and serves it
  /// until it leaves; once none is left, or after drain_timeout, stops as
  /// stop() does. Thread-safe; nothing once stopping.
  void drain();
  /// A drain has begun (read from any thread).
  bool draining() const noexcept { return draining_.load(std::memory_order_relaxed); }

  /// The loop run() runs on this thread: post timers and progress reports here.
  boost::asio::io_context& control_loop() noexcept { return control_; }
  /// The worker loops (for sockets of the caller's own, such as UDP).
  LoopPool& workers() noexcept { return workers_; }
  /// An executor whose handlers never run at once, for a program whose work is
  /// one object that is not a TCP listener (a UDP relay, an ARQ channel): the
  /// control loop in the loop-per-thread design (the object then shares the
  /// thread that calls run(), and the worker loops serve side connections such
  /// as a metrics endpoint's); a new strand of the pool in the thread-pool
  /// design, so one thread can run the object while another waits in the kernel.
  /// Such a server needs no listen(); its on_stop steps should dispatch to
  /// this executor to touch the object.
  boost::asio::any_io_executor make_serial_executor();
  std::size_t threads() const noexcept { return workers_.size(); }
  /// The address and port listened on (after listen()).
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  std::uint16_t port() const { return local_endpoint().port(); }
  /// What it listens on, for a listening line: "127.0.0.1:7000", "[::1]:7000", "unix:/run/svc.sock".
  std::string listening_text() const;
  /// Connections refused (accepted and closed at once) while the process was
  /// out of file descriptors; the server pauses accepting meanwhile instead of spinning.
  std::uint64_t refused_connections() const noexcept { return tcp_ ? tcp_->refused_connections() : 0; }
  /// Connections closed at once because max_connections were open.
  std::uint64_t over_limit_connections() const noexcept { return tcp_ ? tcp_->over_limit_connections() : 0; }
  /// Connections whose TLS handshake failed or missed its deadline.
  std::uint64_t handshake_failures() const noexcept { return tcp_ ? tcp_->handshake_failures() : 0; }
  /// TLS handshakes finished, and those that resumed a session (no certificate exchanged).
  std::uint64_t handshakes() const noexcept { return tcp_ ? tcp_->handshakes() : 0; }
  std::uint64_t resumed_handshakes() const noexcept { return tcp_ ? tcp_->resumed_handshakes() : 0; }
  /// Connections aborted because they had not closed within shutdown_timeout.
  std::uint64_t aborted_at_shutdown() const noexcept { return tcp_ ? tcp_->aborted_at_shutdown() : 0; }
  /// The signal that stopped the server, 0 if none did.
  int stop_signal() const noexcept { return stop_signal_; }

 private:
  boost::asio::ip::tcp::endpoint endpoint() const;
  void wait_for_signal();
  void begin_drain();
  // Stops once no connection is left, or at the drain's deadline.
  void await_drained(std::chrono::steady_clock::time_point deadline);
  void begin_stop();

  // Destroyed bottom-up: the worker loops (and any connection still on them)
  // before the TcpServer their close observers report to, and the control
  // loop last, since the acceptor and the signal set are registered with it.
  ServerOptions options_;
  boost::asio::io_context control_{1};
  boost::asio::signal_set signals_;
  boost::asio::steady_timer drain_timer_;
  std::unique_ptr<TcpServer> tcp_;
  LoopPool workers_;
  std::vector<std::function<void()>> ready_steps_;
  std::vector<std::function<void()>> stop_steps_;
  std::vector<std::function<void()>> drain_steps_;
  std::atomic<bool> draining_{false};  // written on the control loop
  bool stopping_ = false;  // touched on the control loop only
  int stop_signal_ = 0;
};

}  // namespace volley::net
