#include "connection_input.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <volley/net/stream_transport.hpp>
#include <volley/net/tcp_connection.hpp>

#include "spin_readers.hpp"
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

// A busy-polling loop's spinning reads, in front of a wait for the
// connections that find no place among them.
class SpinInput final : public ConnectionInput {
 public:
  SpinInput(SpinReaders& spin, std::unique_ptr<ConnectionInput> overflow)
      : spin_(spin), overflow_(std::move(overflow)) {}

  Kind kind() const noexcept override { return Kind::spin; }
  void wait(std::shared_ptr<TcpConnection> connection) override {
    if (!spin_.wait(connection)) overflow_->wait(std::move(connection));
  }
  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    return overflow_->read_some(buffer, ec);
  }
  bool left_over() const noexcept override { return overflow_->left_over(); }

 private:
  SpinReaders& spin_;
  std::unique_ptr<ConnectionInput> overflow_;
};

// Bytes read through a transport (TLS, WebSocket), which reads the socket
// itself: readiness comes from `socket_input`, unless the transport has
// input already or must write before it can read on.
class TransportInput final : public ConnectionInput {
 public:
  TransportInput(asio::ip::tcp::socket& socket, StreamTransport& transport, std::unique_ptr<ConnectionInput> socket_input)
      : socket_(socket), transport_(transport), socket_input_(std::move(socket_input)) {}

  Kind kind() const noexcept override { return socket_input_->kind(); }
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
    if (blocked == StreamTransport::Wait::none && transport_.has_buffered_input()) {
      asio::post(socket_.get_executor(), [connection = std::move(connection)] { ready(*connection, {}); });
      return;
    }
    socket_input_->wait(std::move(connection));
  }
  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    const std::size_t n = transport_.read_some(buffer, ec);
    last_read_blocked_ = ec == asio::error::would_block || ec == asio::error::try_again;
    return n;
  }
  bool left_over() const noexcept override { return transport_.has_buffered_input(); }

 private:
  asio::ip::tcp::socket& socket_;
  StreamTransport& transport_;
  std::unique_ptr<ConnectionInput> socket_input_;
  bool last_read_blocked_ = false;
};

}  // namespace

std::unique_ptr<ConnectionInput> make_reactor_input(asio::ip::tcp::socket& socket) {
  return std::make_unique<ReactorInput>(socket);
}

std::unique_ptr<ConnectionInput> make_readiness_input(asio::ip::tcp::socket& socket) {
  if (auto edge = make_edge_input(socket)) return edge;
  return make_reactor_input(socket);
}

std::unique_ptr<ConnectionInput> ConnectionInput::make_for(asio::ip::tcp::socket& socket, StreamTransport* transport) {
  if (transport != nullptr) {
    // A transport may leave input on the socket after a short read of its
    // own, where the edge wait would miss it, and it reads the socket itself,
    // where the ring cannot hand it bytes.
    std::unique_ptr<ConnectionInput> readiness = make_reactor_input(socket);
    if (SpinReaders* const spin = SpinReaders::of(socket.get_executor()))
      readiness = std::make_unique<SpinInput>(*spin, std::move(readiness));
    return std::make_unique<TransportInput>(socket, *transport, std::move(readiness));
  }
  // The ring's completions are the input: nothing to spin on.
  if (auto ring = UringRead::make_for(socket)) return ring;
  std::unique_ptr<ConnectionInput> readiness = make_readiness_input(socket);
  if (SpinReaders* const spin = SpinReaders::of(socket.get_executor()))
    return std::make_unique<SpinInput>(*spin, std::move(readiness));
  return readiness;
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
