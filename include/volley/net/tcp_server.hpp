#pragma once
// The acceptor side of the one-loop-per-thread model: it accepts on its own
// loop and hands each new connection (its descriptor) to the next worker loop,
// round-robin. It listens on a TCP endpoint or on a Unix socket (unix_socket.hpp).
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/loop_pool.hpp>
#include <volley/net/tcp_connection.hpp>
#include <volley/net/unix_socket.hpp>

namespace volley::net {

// How a TCP listening socket is made.
struct ListenOptions {
  // SO_REUSEPORT: several processes listen on one port and the kernel
  // spreads new connections among them (each must set it), so a new
  // version starts beside the old one before the old one stops.
  bool reuse_port = false;
};

class TcpServer {
 public:
  // Makes the protocol handler of a new connection; runs on the worker loop
  // `worker` the connection will live on.
  using HandlerFactory = std::function<std::unique_ptr<StreamHandler>(std::size_t worker)>;

  // Makes the transport of a new connection (TLS); runs on its worker loop.
  using TransportFactory = std::function<std::unique_ptr<StreamTransport>()>;

  // Binds and listens at once: a taken port fails here (throws boost::system::system_error).
  // `limits`: every connection's bound on output queued for a peer that does not read.
  // Accepts on `accept_executor`: a loop, or a strand of a thread pool.
  TcpServer(const boost::asio::any_io_executor& accept_executor, LoopPool& workers,
            const boost::asio::ip::tcp::endpoint& endpoint, HandlerFactory factory, ConnectionLimits limits = {},
            TransportFactory transport = {}, ListenOptions listening = {});
  TcpServer(boost::asio::io_context& accept_loop, LoopPool& workers, const boost::asio::ip::tcp::endpoint& endpoint,
            HandlerFactory factory, ConnectionLimits limits = {}, TransportFactory transport = {},
            ListenOptions listening = {})
      : TcpServer(accept_loop.get_executor(), workers, endpoint, std::move(factory), limits, std::move(transport),
                  listening) {}
  // Listens on a Unix socket instead (listen_unix: a stale file is replaced,
  // a live server's refused; `mode` >= 0 the file's permissions), and removes
  // its file when it stops. Throws boost::system::system_error.
  TcpServer(const boost::asio::any_io_executor& accept_executor, LoopPool& workers, const UnixAddress& address,
            int mode, HandlerFactory factory, ConnectionLimits limits = {}, TransportFactory transport = {});
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  ~TcpServer();

  // The TCP endpoint listened on (empty for a Unix socket).
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // The Unix socket listened on, if that is what it listens on.
  const std::optional<UnixAddress>& unix_address() const noexcept { return unix_; }
  void start();
  // Connections closed at once because the process was out of descriptors.
  std::uint64_t refused_connections() const noexcept { return refused_.load(std::memory_order_relaxed); }
  // At most `n` connections open at once (0: no limit); one more is accepted
  // and closed at once, and counted. Call before start().
  void set_max_connections(std::size_t n) noexcept { max_connections_ = n; }
  std::uint64_t over_limit_connections() const noexcept { return over_limit_.load(std::memory_order_relaxed); }
  // Connections whose transport's handshake failed or missed its deadline.
  std::uint64_t handshake_failures() const noexcept { return handshake_failures_.load(std::memory_order_relaxed); }
  // Transport handshakes finished, and those of them that resumed a session
  // the client was issued before (TLS session resumption).
  std::uint64_t handshakes() const noexcept { return handshakes_.load(std::memory_order_relaxed); }
  std::uint64_t resumed_handshakes() const noexcept { return resumed_handshakes_.load(std::memory_order_relaxed); }
  // Stops accepting and closes every connection gracefully, each on its loop;
  // a connection still not closed after `deadline` (a peer that stopped
  // reading keeps a flush from ever finishing) is aborted, its unsent bytes
  // reported in its CloseReason. Call on the accept executor. The worker loops
  // run until every connection is closed, `deadline` at the most.
  static constexpr std::chrono::milliseconds kDefaultShutdownDeadline{5000};
  void shutdown(std::chrono::milliseconds deadline = kDefaultShutdownDeadline);
  // Stops accepting and asks each connection's handler to send its peer
  // elsewhere (StreamHandler::on_drain: a session's goodbye), serving it
  // until it leaves; shutdown() ends those still open later. Connections the
  // kernel had queued on the listener are accepted and told too, rather than
  // reset with the listener. Call on the accept executor.
  void drain();
  // Connections accepted and not yet closed.
  std::size_t open_connections() const noexcept { return open_.load(std::memory_order_relaxed); }
  // Connections the shutdown deadline aborted.
  std::uint64_t aborted_at_shutdown() const noexcept { return aborted_.load(std::memory_order_relaxed); }

 private:
  TcpServer(const boost::asio::any_io_executor& accept_executor, LoopPool& workers, HandlerFactory factory,
            ConnectionLimits limits, TransportFactory transport);
  // Closes the listening socket (removing a Unix socket's file first).
  void stop_listening();
  void do_accept();
  // Hands an accepted socket (its descriptor) to the next worker loop, counted open.
  void hand_over(boost::asio::ip::tcp::socket socket);
  void hand_over(int fd);
  void shed_one_connection();
  std::vector<std::shared_ptr<TcpConnection>> live_on(std::size_t worker);
  // Makes and starts the connection of a socket accepted for worker loop `worker`, on it.
  void adopt(std::size_t worker, boost::asio::ip::tcp::socket socket);

  LoopPool& workers_;
  // A Unix socket's listening descriptor is kept in the TCP acceptor type too:
  // accept(2) is the same call.
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp protocol_ = boost::asio::ip::tcp::v4();  // given to each accepted socket
  std::optional<UnixAddress> unix_;
  UnixSocketFile unix_file_;  // removed when the server stops listening
  // Out of descriptors, a pending connection keeps the listener readable, so
  // accepting again at once would spin. The server pauses accepting briefly,
  // and spends a reserve descriptor to accept and close one pending
  // connection per pause, so its client hears "no" instead of waiting.
  boost::asio::steady_timer accept_pause_;
  int reserve_fd_ = -1;
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::uint64_t> aborted_{0};
  std::size_t max_connections_ = 0;
  std::atomic<std::size_t> open_{0};  // accepted and not yet closed (counted on the accept loop, released on the workers)
  std::atomic<std::uint64_t> over_limit_{0};
  std::atomic<std::uint64_t> handshake_failures_{0};
  std::atomic<std::uint64_t> handshakes_{0};
  std::atomic<std::uint64_t> resumed_handshakes_{0};
  std::atomic<bool> draining_{false};  // set on the accept executor, read by the workers as they adopt
  HandlerFactory factory_;
  TransportFactory transport_;
  ConnectionLimits limits_;
  // live_[w] is touched only on worker loop w.
  std::vector<std::unordered_map<TcpConnection*, std::weak_ptr<TcpConnection>>> live_;
  // deadline_[w]: worker w's shutdown deadline while it runs (touched on loop w
  // only); its pending wait owns it, so it never outlives the loop.
  std::vector<std::weak_ptr<boost::asio::steady_timer>> deadline_;
};

}  // namespace volley::net
