#include <volley/net/tcp_server.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <volley/net/close_without_cancel.hpp>
#include <volley/net/tcp_connect.hpp>

namespace volley::net {

namespace asio = boost::asio;

namespace {

// The next connection the kernel queued on `listener`, or -1 when there is
// none: never waits. Asio's io_uring backend accepts through the ring and
// leaves the listener blocking, so O_NONBLOCK is set for this call only, and
// the flags Asio chose are put back.
int accept_queued(int listener) {
  const int flags = ::fcntl(listener, F_GETFL);
  if (flags < 0) return -1;
  if ((flags & O_NONBLOCK) == 0 && ::fcntl(listener, F_SETFL, flags | O_NONBLOCK) != 0) return -1;
  const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if ((flags & O_NONBLOCK) == 0) {
    const int saved = errno;
    ::fcntl(listener, F_SETFL, flags);
    errno = saved;
  }
  return fd;
}

}  // namespace

TcpServer::TcpServer(const asio::any_io_executor& accept_executor, LoopPool& workers, HandlerFactory factory,
                     ConnectionLimits limits, TransportFactory transport)
    : workers_(workers),
      acceptor_(accept_executor),
      accept_pause_(accept_executor),
      reserve_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)),
      factory_(std::move(factory)),
      transport_(std::move(transport)),
      limits_(limits),
      live_(workers.size()),
      deadline_(workers.size()) {}

TcpServer::TcpServer(const asio::any_io_executor& accept_executor, LoopPool& workers,
                     const asio::ip::tcp::endpoint& endpoint, HandlerFactory factory, ConnectionLimits limits,
                     TransportFactory transport, ListenOptions listening)
    : TcpServer(accept_executor, workers, std::move(factory), limits, std::move(transport)) {
  protocol_ = endpoint.protocol();
  boost::system::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec && listening.reuse_port) {
    const int on = 1;
    if (::setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
      ec.assign(errno, boost::system::system_category());
  }
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    // The address and the reason, without Asio's source location.
    const boost::system::error_code plain(ec.value(), ec.category());
    throw boost::system::system_error(
        plain, "cannot listen on " + endpoint_text(endpoint) +
                   (ec == asio::error::address_in_use && !listening.reuse_port
                        ? " (another server has it; servers share a port only if each sets reuse_port: --reuse-port)"
                        : ""));
  }
}

TcpServer::TcpServer(const asio::any_io_executor& accept_executor, LoopPool& workers, const UnixAddress& address,
                     int mode, HandlerFactory factory, ConnectionLimits limits, TransportFactory transport)
    : TcpServer(accept_executor, workers, std::move(factory), limits, std::move(transport)) {
  std::error_code ec;
  const int fd = listen_unix(address, mode, unix_file_, ec);
  if (fd < 0)
    throw boost::system::system_error(boost::system::error_code(ec),
                                      ec == std::errc::file_exists ? address.text() + " exists and is not a socket"
                                      : ec == std::errc::address_in_use
                                          ? address.text() + ": another server is listening there"
                                          : address.text());
  acceptor_.assign(protocol_, fd);
  unix_ = address;
}

TcpServer::~TcpServer() {
  if (reserve_fd_ >= 0) ::close(reserve_fd_);
  // An accept may still be in flight (a server destroyed before it stopped,
  // its loop no longer running). On io_uring the acceptor then goes on in a
  // wait of its own until the loop shuts down, which destroys both operations
  // while Asio's services are alive; Asio's own close would free its object
  // with the accept still queued, to be destroyed after the socket service it
  // refers to.
  stop_listening();
}

asio::ip::tcp::endpoint TcpServer::local_endpoint() const {
  if (unix_) return {};
  return acceptor_.local_endpoint();
}

void TcpServer::stop_listening() {
  if (unix_ && acceptor_.is_open()) remove_unix_socket_file(*unix_, unix_file_);
  close_without_cancel(acceptor_);
}

void TcpServer::start() { do_accept(); }

void TcpServer::shed_one_connection() {
  if (reserve_fd_ < 0) return;
  ::close(reserve_fd_);
  const int fd = accept_queued(acceptor_.native_handle());
  if (fd >= 0) ::close(fd);
  reserve_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void TcpServer::do_accept() {
  // Accept on the accept loop's own context and hand the worker only the
  // descriptor: no pending operation of one loop ever holds an object of
  // another, so the loops can be torn down in any order.
  acceptor_.async_accept([this](const boost::system::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!acceptor_.is_open()) {
      // Accepted as the listener closed for a drain: told to go, not reset.
      if (!ec && draining_.load(std::memory_order_relaxed)) hand_over(std::move(socket));
      return;
    }
    if (ec == asio::error::no_descriptors || ec.value() == ENFILE || ec == asio::error::no_buffer_space ||
        ec == asio::error::no_memory) {
      // Keep serving the connections we have; refuse one pending connection,
      // then wait a little before accepting again, so the loop does not spin.
      const std::uint64_t refused = refused_.fetch_add(1, std::memory_order_relaxed) + 1;
      if (refused == 1 || refused % 1000 == 0)
        spdlog::warn("accept failed: {}; refusing connections until descriptors free up ({} so far)", ec.message(),
                     refused);
      shed_one_connection();
      accept_pause_.expires_after(std::chrono::milliseconds(20));
      accept_pause_.async_wait([this](const boost::system::error_code& wait_error) {
        if (!wait_error && acceptor_.is_open()) do_accept();
      });
      return;
    }
    if (ec) {
      // A connection reset before it was accepted, and the like: accept the next.
      spdlog::debug("accept failed: {}", ec.message());
    } else if (max_connections_ > 0 && open_.load(std::memory_order_relaxed) >= max_connections_) {
      // Over the limit: accepted (so the client hears at once, instead of
      // waiting in the backlog) and closed, counted, logged now and then.
      const std::uint64_t over = over_limit_.fetch_add(1, std::memory_order_relaxed) + 1;
      boost::system::error_code ignored;
      if (over == 1 || over % 1000 == 0)
        spdlog::warn("connection from {} closed: {} connections open, the maximum ({} so far)",
                     unix_ ? describe_unix_peer(socket.native_handle())
                           : socket.remote_endpoint(ignored).address().to_string(),
                     max_connections_, over);
      socket.close(ignored);
    } else {
      hand_over(std::move(socket));
    }
    do_accept();
  });
}

void TcpServer::hand_over(asio::ip::tcp::socket socket) {
  boost::system::error_code release_error;
  const int fd = socket.release(release_error);
  if (release_error) {
    spdlog::warn("accept: cannot hand the connection over: {}", release_error.message());
    return;
  }
  hand_over(fd);
}

void TcpServer::hand_over(int fd) {
  open_.fetch_add(1, std::memory_order_relaxed);
  const std::size_t worker = workers_.next_index();
  const auto protocol = protocol_;
  asio::post(workers_.slot_executor(worker), [this, worker, protocol, fd] {
    asio::ip::tcp::socket s(workers_.connection_executor(worker));
    boost::system::error_code assign_error;
    s.assign(protocol, fd, assign_error);
    if (assign_error) {
      ::close(fd);
      open_.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    adopt(worker, std::move(s));
  });
}

void TcpServer::adopt(std::size_t worker, asio::ip::tcp::socket socket) {
  auto connection = std::make_shared<TcpConnection>(std::move(socket), factory_(worker), limits_,
                                                    transport_ ? transport_() : nullptr);
  auto& live = live_[worker];
  live.emplace(connection.get(), connection);
  if (connection->transport() != nullptr)
    connection->set_handshake_observer([this](TcpConnection& c) {
      handshakes_.fetch_add(1, std::memory_order_relaxed);
      if (c.transport()->resumed_session()) resumed_handshakes_.fetch_add(1, std::memory_order_relaxed);
    });
  connection->set_close_observer([this, worker](TcpConnection& c) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    if (c.close_kind() == CloseReason::Kind::handshake_failed)
      handshake_failures_.fetch_add(1, std::memory_order_relaxed);
    // The slot's bookkeeping is the slot's: at once when the connection runs
    // on the slot's loop, else posted there (`c` is only a key by then).
    asio::dispatch(workers_.slot_executor(worker), [this, worker, key = &c] {
      live_[worker].erase(key);
      // The last connection closed in time: the deadline has nothing left to
      // do and must not hold the loop open until it expires.
      if (live_[worker].empty())
        if (auto deadline = deadline_[worker].lock()) deadline->cancel();
    });
  });
  // On the connection's own executor (the slot's loop, or its strand).
  asio::dispatch(connection->get_executor(), [connection, draining = draining_.load(std::memory_order_relaxed)] {
    connection->start();
    if (draining) connection->drain();
  });
}

std::vector<std::shared_ptr<TcpConnection>> TcpServer::live_on(std::size_t worker) {
  // A copy: a close may finish at once and erase itself from the map.
  std::vector<std::shared_ptr<TcpConnection>> connections;
  for (auto& [ptr, weak] : live_[worker])
    if (auto c = weak.lock()) connections.push_back(std::move(c));
  return connections;
}

void TcpServer::drain() {
  if (draining_.exchange(true, std::memory_order_relaxed)) return;
  accept_pause_.cancel();
  // What the kernel queued on the listener would be reset when it closes
  // (with SO_REUSEPORT the queue is this socket's alone): take it first.
  if (acceptor_.is_open())
    for (int fd = accept_queued(acceptor_.native_handle()); fd >= 0; fd = accept_queued(acceptor_.native_handle()))
      hand_over(fd);
  stop_listening();
  for (std::size_t w = 0; w < workers_.size(); ++w)
    asio::post(workers_.slot_executor(w), [this, w] {
      for (auto& c : live_on(w)) asio::dispatch(c->get_executor(), [c] { c->drain(); });
    });
}

void TcpServer::shutdown(std::chrono::milliseconds deadline) {
  accept_pause_.cancel();
  stop_listening();
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    asio::post(workers_.slot_executor(w), [this, w, deadline] {
      // Each connection is closed on its own executor (at once on a loop of its slot).
      for (auto& c : live_on(w))
        asio::dispatch(c->get_executor(), [c] { c->close({CloseReason::Kind::shutdown, {}}); });
      if (live_[w].empty()) return;
      auto timer = std::make_shared<asio::steady_timer>(workers_.slot_executor(w), deadline);
      deadline_[w] = timer;
      timer->async_wait([this, w, timer, deadline](const boost::system::error_code& ec) {
        if (ec) return;
        for (auto& c : live_on(w)) {
          aborted_.fetch_add(1, std::memory_order_relaxed);
          asio::dispatch(c->get_executor(), [c, deadline] {
            c->abort({CloseReason::Kind::shutdown,
                      fmt::format("not closed {} ms after shutdown began: aborted", deadline.count())});
          });
        }
      });
    });
  }
}

}  // namespace volley::net
