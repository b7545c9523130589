#include <volley/net/tcp_message_channel.hpp>

#include <array>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <volley/net/close_without_cancel.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/error.hpp>

namespace volley::net {

namespace asio = boost::asio;
using asio::ip::tcp;

struct TcpMessageChannel::State : std::enable_shared_from_this<State> {
  // What this side has done with its direction.
  enum class Output { open, closing, shut };

  State(tcp::socket s, std::optional<tcp::acceptor> a, MessageHandler m, Options o)
      : socket(std::move(s)), acceptor(std::move(a)), on_message(std::move(m)), options(o) {}

  void start() {
    if (!acceptor) return begin();
    acceptor->async_accept(socket, [self = shared_from_this()](const boost::system::error_code& ec) {
      if (self->stopped) return;
      if (ec) return self->fail(ec);
      boost::system::error_code ignored;
      self->acceptor->close(ignored);  // one peer: nobody else may connect
      self->acceptor.reset();
      self->begin();
    });
  }

  void begin() {
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // a message leaves when sent
    if (ready_done) std::exchange(ready_done, nullptr)({});
    read_length();
    write();
  }
  bool connected() const { return !acceptor; }

  bool send(std::span<const std::byte> m) {
    if (error || stopped || output != Output::open) return false;
    std::vector<std::byte> framed(4 + m.size());
    wire::store_u32_be(framed.data(), static_cast<std::uint32_t>(m.size()));
    std::copy(m.begin(), m.end(), framed.begin() + 4);
    queue.push_back(std::move(framed));
    stats.messages_sent += 1;
    write();
    return true;
  }

  void close(Done done) {
    close_done = std::move(done);
    if (output == Output::open) output = Output::closing;
    if (error) return finish();
    write();
  }

  void stop() {
    stopped = true;
    if (acceptor) close_without_cancel(*acceptor);
    close_without_cancel(socket);
  }

  // Writes the queue one message at a time; once it is empty after close(),
  // shuts this direction down, so the peer reads to the end of file.
  void write() {
    if (writing || stopped || error || !connected()) return;
    if (queue.empty()) {
      if (output == Output::closing) {
        output = Output::shut;
        boost::system::error_code ignored;
        socket.shutdown(tcp::socket::shutdown_send, ignored);
        if (peer_finished) finish();
      }
      return;
    }
    writing = true;
    asio::async_write(socket, asio::buffer(queue.front()),
                      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                        self->writing = false;
                        if (self->stopped) return;
                        if (ec) return self->fail(ec);
                        self->stats.bytes_sent += n;
                        self->queue.pop_front();
                        self->write();
                      });
  }

  void read_length() {
    asio::async_read(socket, asio::buffer(length), [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
      if (self->stopped) return;
      if (ec == asio::error::eof) return self->peer_ended();
      if (ec) return self->fail(ec);
      const std::uint32_t n = wire::load_u32_be(self->length.data());
      if (n > self->options.max_message_size) {
        self->fail(wire::make_error_code(wire::Errc::length_over_maximum));
        close_without_cancel(self->socket);  // a write in flight fails; the error is already set
        return;
      }
      self->body.resize(n);
      self->read_body();
    });
  }

  void read_body() {
    asio::async_read(socket, asio::buffer(body), [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
      if (self->stopped) return;
      if (ec) return self->fail(ec);  // an end of file here cut a message: a failure, not an end
      self->stats.bytes_received += 4 + n;
      self->stats.messages_received += 1;
      self->on_message(self->body);
      if (!self->stopped) self->read_length();
    });
  }

  void peer_ended() {
    peer_finished = true;
    if (peer_done) std::exchange(peer_done, nullptr)({});
    if (output == Output::shut) finish();  // both directions ended
  }

  void fail(const std::error_code& why) {
    if (!error) error = why;
    if (ready_done) std::exchange(ready_done, nullptr)(error);
    if (peer_done) std::exchange(peer_done, nullptr)(error);
    finish();
  }

  void finish() {
    if (close_done) std::exchange(close_done, nullptr)(error);
  }

  tcp::socket socket;
  std::optional<tcp::acceptor> acceptor;  // until the one peer is accepted
  MessageHandler on_message;
  Options options;
  Done ready_done, close_done, peer_done;
  std::deque<std::vector<std::byte>> queue;  // the front is being written
  std::array<std::byte, 4> length{};
  std::vector<std::byte> body;
  TcpMessageChannelStats stats;
  std::error_code error;
  Output output = Output::open;
  bool writing = false;        // an async_write is in flight
  bool peer_finished = false;  // the peer's end of file arrived
  bool stopped = false;
};

TcpMessageChannel::TcpMessageChannel(tcp::socket connected, MessageHandler on_message, Options options)
    : state_(std::make_shared<State>(std::move(connected), std::nullopt, std::move(on_message), options)) {}

TcpMessageChannel::TcpMessageChannel(tcp::acceptor listening, MessageHandler on_message, Options options) {
  tcp::socket socket(listening.get_executor());
  state_ = std::make_shared<State>(std::move(socket), std::move(listening), std::move(on_message), options);
}

TcpMessageChannel::~TcpMessageChannel() { state_->stop(); }

void TcpMessageChannel::start() { state_->start(); }

void TcpMessageChannel::on_ready(Done ready) {
  if (state_->error) return ready(state_->error);
  if (state_->connected()) return ready({});
  state_->ready_done = std::move(ready);
}

bool TcpMessageChannel::send(std::span<const std::byte> message) { return state_->send(message); }

void TcpMessageChannel::close(Done done) { state_->close(std::move(done)); }

void TcpMessageChannel::on_peer_finished(Done done) {
  if (state_->peer_finished || state_->error) return done(state_->error);
  state_->peer_done = std::move(done);
}

void TcpMessageChannel::stop() { state_->stop(); }

std::error_code TcpMessageChannel::error() const { return state_->error; }

const TcpMessageChannelStats& TcpMessageChannel::stats() const noexcept { return state_->stats; }

tcp::endpoint TcpMessageChannel::local_endpoint() const {
  boost::system::error_code ec;
  const auto e = state_->acceptor ? state_->acceptor->local_endpoint(ec) : state_->socket.local_endpoint(ec);
  return ec ? tcp::endpoint() : e;
}

}  // namespace volley::net
