#include "connection_input.hpp"

#include <cerrno>

#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <volley/net/stream_transport.hpp>
#include <volley/net/tcp_connection.hpp>

#include "reactor_membership.hpp"
#include "spin_readers.hpp"
#include "tcp_inq.hpp"
#include "uring_receive.hpp"

namespace volley::net::detail {

namespace asio = boost::asio;

namespace {

class ReactorInput final : public ConnectionInput {
 public:
  explicit ReactorInput(asio::ip::tcp::socket& socket) : socket_(socket) {}

  Kind kind() const noexcept override { return Kind::reactor; }
  void wait(std::shared_ptr<TcpConnection> connection) override {
    // Asio re-arms the socket's epoll registration (epoll_ctl) for every wait.
    socket_.async_wait(asio::socket_base::wait_read,
                       [connection = std::move(connection)](const boost::system::error_code& ec) {
                         ready(*connection, ec);
                       });
  }
  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    return socket_.read_some(asio::buffer(buffer.data(), buffer.size()), ec);
  }
  // A plain read does not say what it left: only a full buffer means "read again".
  bool left_over() const noexcept override { return false; }

 private:
  asio::ip::tcp::socket& socket_;
};

// A busy-polling loop's spinning reads, in front of the reactor's wait for
// the connections that find no place among them. Every read is a plain
// receive: a spinning connection reads again on the next turn, and a waiting
// one is woken by a wait that also reports input already there, so no read
// needs to know what it left. The kernel's count of it (TCP_INQ, which the
// edge wait turns on under a transport) is work in every receive, even one
// without room for the count (about 0.05 us a read here, 0.13 us with the
// room: bench/micro/tcp_inq_bench.cpp), on the very read a round trip waits
// for. So these sockets never turn it on.
// With `plain` (plain TCP: a transport reads the socket itself, and with none
// the connection's only Asio operations on the socket are its writes that
// wait, which call use_reactor() first), a spinning socket also leaves the
// reactor (reactor_membership.hpp) until a wait or a write needs it.
class SpinInput final : public ConnectionInput {
 public:
  SpinInput(SpinReaders& spin, asio::ip::tcp::socket& socket, bool plain)
      : spin_(spin), socket_(socket), overflow_(socket), plain_(plain) {}

  Kind kind() const noexcept override { return Kind::spin; }
  void wait(std::shared_ptr<TcpConnection> connection) override {
    // Leaving is for a socket with nothing queued on the reactor: no write in
    // flight (the read waits are this input's own, and it is not waiting).
    const bool may_leave = plain_ && in_reactor_ && !writing(*connection);
    if (spin_.wait(connection)) {
      if (may_leave && leave_reactor(socket_)) {
        in_reactor_ = false;
        spin_.count_reactor_move(true);
      }
      return;
    }
    if (const boost::system::error_code ec = use_reactor()) {
      // The wait ends at once, on the loop's next turn: the connection sees `ec`.
      asio::post(socket_.get_executor(), [connection = std::move(connection), ec] { ready(*connection, ec); });
      return;
    }
    overflow_.wait(std::move(connection));
  }
  boost::system::error_code use_reactor() override {
    if (in_reactor_) return {};
    const boost::system::error_code ec = rejoin_reactor(socket_);
    if (ec) return ec;
    in_reactor_ = true;
    spin_.count_reactor_move(false);
    return {};
  }
  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    ssize_t n;
    do {
      n = ::recv(socket_.native_handle(), buffer.data(), buffer.size(), 0);  // the socket is non-blocking
    } while (n < 0 && errno == EINTR);
    return receive_result(n, buffer.size(), ec);
  }
  // Only a full buffer means "read on now".
  bool left_over() const noexcept override { return false; }

 private:
  SpinReaders& spin_;
  asio::ip::tcp::socket& socket_;
  ReactorInput overflow_;
  const bool plain_;
  bool in_reactor_ = true;
};

// Bytes read through a transport (TLS, WebSocket), which reads the socket
// itself: readiness comes from `socket_input`, unless the transport has
// input already or must write before it can read on. With `edge` (a loop one
// thread runs, epoll), a transport that read the socket dry waits for the
// next edge instead (no epoll_ctl per wait).
class TransportInput final : public ConnectionInput {
 public:
  TransportInput(asio::ip::tcp::socket& socket, StreamTransport& transport, std::unique_ptr<ConnectionInput> socket_input,
                 std::unique_ptr<ConnectionInput> edge, SpinReaders* spin)
      : socket_(socket), transport_(transport), socket_input_(std::move(socket_input)), edge_(std::move(edge)), spin_(spin) {}

  Kind kind() const noexcept override { return edge_ ? Kind::edge : socket_input_->kind(); }
  void wait(std::shared_ptr<TcpConnection> connection) override {
    // What blocked_on() says belongs to the transport's last call, which may
    // have been a write: it is asked only right after a read that blocked.
    const StreamTransport::Wait blocked = last_read_blocked_ ? transport_.blocked_on() : StreamTransport::Wait::none;
    if (blocked == StreamTransport::Wait::write) {
      socket_.async_wait(asio::socket_base::wait_write,
                         [connection = std::move(connection)](const boost::system::error_code& ec) {
                           ready(*connection, ec);
                         });
      return;
    }
    // The transport ended its turn with input left (or holds the end): read
    // on after the loop's other work. Blocked on a read, what it holds is
    // not enough to go on with (part of a TLS record): wait for more.
    // A transport whose input raises no readiness by itself asks for a
    // doorbell before the loop sleeps (a spinning loop looks without one).
    if ((blocked == StreamTransport::Wait::none && transport_.has_buffered_input()) ||
        ((spin_ == nullptr || !spin_->has_room()) && !transport_.prepare_to_wait())) {
      asio::post(socket_.get_executor(), [connection = std::move(connection)] { ready(*connection, {}); });
      return;
    }
    // The edge wait is right only right after a receive that left the
    // socket empty, which the transport knows; otherwise Asio's wait, which
    // also reports input already there.
    if (edge_ && transport_.read_socket_dry()) return edge_->wait(std::move(connection));
    socket_input_->wait(std::move(connection));
  }
  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    const std::size_t n = transport_.read_some(buffer, ec);
    last_read_blocked_ = ec == asio::error::would_block || ec == asio::error::try_again;
    return n;
  }
  bool worth_reading() override { return transport_.worth_reading(); }
  // The edge wait's own "left over" is the peer's end, an error or a hang-up
  // it saw with the last edge: the transport reads on until the socket gives it.
  bool left_over() const noexcept override {
    return transport_.has_buffered_input() || (edge_ && edge_->left_over());
  }

 private:
  asio::ip::tcp::socket& socket_;
  StreamTransport& transport_;
  std::unique_ptr<ConnectionInput> socket_input_;
  std::unique_ptr<ConnectionInput> edge_;
  SpinReaders* spin_;  // the loop's spinning readers, or null
  bool last_read_blocked_ = false;
};

}  // namespace

std::unique_ptr<ConnectionInput> make_reactor_input(asio::ip::tcp::socket& socket) {
  return std::make_unique<ReactorInput>(socket);
}

std::unique_ptr<ConnectionInput> make_readiness_input(asio::ip::tcp::socket& socket) {
  if (auto edge = make_edge_input(socket, EdgeReader::connection)) return edge;
  return make_reactor_input(socket);
}

std::unique_ptr<ConnectionInput> ConnectionInput::make_for(asio::ip::tcp::socket& socket, StreamTransport* transport) {
  if (transport != nullptr) {
    // A transport reads the socket itself, where the ring cannot hand it
    // bytes, and may leave input on the socket after a short read of its
    // own, where the edge wait would miss it: the edge is used only after a
    // read the transport knows left the socket dry (make_edge_input turns on
    // TCP_INQ, which lets it know).
    if (SpinReaders* const spin = SpinReaders::of(socket.get_executor()))
      return std::make_unique<TransportInput>(socket, *transport, std::make_unique<SpinInput>(*spin, socket, false),
                                              nullptr, spin);
    return std::make_unique<TransportInput>(socket, *transport, make_reactor_input(socket),
                                            make_edge_input(socket, EdgeReader::transport),
                                            nullptr);
  }
  // The ring's completions are the input: nothing to spin on.
  if (auto ring = UringRead::make_for(socket)) return ring;
  if (SpinReaders* const spin = SpinReaders::of(socket.get_executor()))
    return std::make_unique<SpinInput>(*spin, socket, true);
  return make_readiness_input(socket);
}

const char* to_string(ConnectionInput::Kind kind) noexcept {
  switch (kind) {
    case ConnectionInput::Kind::reactor: return "reactor";
    case ConnectionInput::Kind::edge: return "edge";
    case ConnectionInput::Kind::spin: return "spin";
    case ConnectionInput::Kind::io_uring: return "io_uring";
  }
  return "?";
}

}  // namespace volley::net::detail
