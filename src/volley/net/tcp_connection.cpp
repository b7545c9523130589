// TcpConnection: its life (start, handshake, idle check, close) and its input;
// the output is in tcp_connection_output.cpp.
#include <volley/net/tcp_connection.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <optional>
#include <utility>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <volley/net/close_without_cancel.hpp>
#include <volley/net/tcp_connect.hpp>
#include <volley/net/unix_socket.hpp>
#include "connection_input.hpp"

namespace volley::net {

namespace asio = boost::asio;

const char* to_string(CloseReason::Kind kind) noexcept {
  switch (kind) {
    case CloseReason::Kind::peer_closed: return "peer closed";
    case CloseReason::Kind::io_error: return "i/o error";
    case CloseReason::Kind::protocol_error: return "protocol error";
    case CloseReason::Kind::local_close: return "closed locally";
    case CloseReason::Kind::shutdown: return "shutdown";
    case CloseReason::Kind::heartbeat_timeout: return "heartbeat timeout";
    case CloseReason::Kind::idle_timeout: return "idle timeout";
    case CloseReason::Kind::slow_consumer: return "slow consumer";
    case CloseReason::Kind::handshake_failed: return "handshake failed";
    case CloseReason::Kind::peer_going_away: return "peer going away";
  }
  return "?";
}

void StreamHandler::on_drain(TcpConnection& connection) { connection.close({CloseReason::Kind::shutdown, {}}); }

TcpConnection::TcpConnection(asio::ip::tcp::socket socket, std::unique_ptr<StreamHandler> handler,
                             ConnectionLimits limits, std::unique_ptr<StreamTransport> transport)
    : socket_(std::move(socket)),
      linger_timer_(socket_.get_executor()),
      slow_timer_(socket_.get_executor()),
      idle_timer_(socket_.get_executor()),
      limits_(limits),
      handler_(std::move(handler)),
      transport_(std::move(transport)),
      input_(detail::ConnectionInput::make_for(socket_, transport_.get())) {
  if (limits_.low_water == 0 || limits_.low_water > limits_.high_water) limits_.low_water = limits_.high_water / 4;
  if (transport_) state_ = State::handshaking;
  boost::system::error_code ec;
  remote_ = socket_.remote_endpoint(ec);
  if (!ec && remote_.data()->sa_family == AF_UNIX) {  // no address, no Nagle
    remote_ = {};
    peer_ = describe_unix_peer(socket_.native_handle());
    return;
  }
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  peer_ = endpoint_text(remote_);
}

// Out of line: the handler may be a type only the .cpp files know well.
TcpConnection::~TcpConnection() = default;

void TcpConnection::start() {
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);  // flush() writes synchronously first and must never block
  if (!transport_) return begin();
  transport_->attach(socket_.native_handle());
  if (limits_.handshake_timeout.count() > 0) {
    // The linger timer is free until the connection is open: it keeps the handshake's deadline.
    linger_timer_.expires_after(limits_.handshake_timeout);
    linger_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& wait_error) {
      if (wait_error || self->state_ != State::handshaking) return;
      self->finish({CloseReason::Kind::handshake_failed,
                    "timed out: no handshake within " + std::to_string(self->limits_.handshake_timeout.count()) +
                        " ms",
                    std::make_error_code(std::errc::timed_out)});
    });
  }
  continue_handshake();
}

void TcpConnection::continue_handshake() {
  boost::system::error_code ec;
  const StreamTransport::Wait wait = transport_->handshake(ec);
  if (ec) return finish({CloseReason::Kind::handshake_failed, ec.message(), ec});
  if (wait == StreamTransport::Wait::none) {
    linger_timer_.cancel();
    state_ = State::open;
    if (handshake_observer_) handshake_observer_(*this);
    return begin();
  }
  wait_then(wait, [self = shared_from_this()](const boost::system::error_code& wait_error) {
    if (self->state_ != State::handshaking) return;
    if (wait_error) return self->finish({CloseReason::Kind::handshake_failed, wait_error.message(), wait_error});
    self->continue_handshake();
  });
}

void TcpConnection::wait_then(StreamTransport::Wait wait, std::function<void(const boost::system::error_code&)> then) {
  if (wait == StreamTransport::Wait::own_descriptor) {
    if (!own_wait_) {
      // A copy of the descriptor: the transport keeps its own, and this one
      // closes (without a cancel, as the socket does) when the connection ends.
      const int fd = ::dup(transport_->own_descriptor());
      if (fd < 0) {
        const boost::system::error_code ec(errno, boost::system::system_category());
        asio::post(socket_.get_executor(), [then = std::move(then), ec] { then(ec); });
        return;
      }
      own_wait_ = std::make_unique<asio::posix::stream_descriptor>(socket_.get_executor(), fd);
    }
    own_wait_->async_wait(asio::posix::descriptor_base::wait_read, std::move(then));
    return;
  }
  socket_.async_wait(wait == StreamTransport::Wait::read ? asio::socket_base::wait_read : asio::socket_base::wait_write,
                     std::move(then));
}

void TcpConnection::begin() {
  {
    const Corked corked(*this);
    handler_->on_open(*this);
  }
  if (state_ == State::closed) return;
  maybe_flush();
  if (state_ == State::closed) return;
  post_read();  // bytes may be waiting already
  if (limits_.idle_timeout.count() > 0) arm_idle_check();
}

// Checks four times per timeout: a connection is closed between one and one
// and a quarter timeouts after its last byte, with one timer wake-up per
// quarter however busy it is. Half a timeout quiet, a transport with
// keepalives of its own asks the peer to show it is there (a WebSocket ping):
// the answer counts as a byte, so a browser that holds a connection open
// without a message stays, and one that has gone is closed.
void TcpConnection::arm_idle_check() {
  idle_timer_.expires_after(limits_.idle_timeout / 4);
  idle_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->state_ != State::open) return;
    const std::uint64_t heard = self->keepalives_heard();
    if (self->active_ || heard != self->keepalives_seen_) {
      self->active_ = false;
      self->keepalives_seen_ = heard;
      self->quiet_checks_ = 0;
    } else if (++self->quiet_checks_ >= 4) {
      return self->close({CloseReason::Kind::idle_timeout, "no byte either way for " +
                                                               std::to_string(self->limits_.idle_timeout.count()) + " ms"});
    } else if (self->quiet_checks_ == 2) {
      self->send_keepalive();
    }
    self->arm_idle_check();
  });
}

bool TcpConnection::send_keepalive() {
  return state_ == State::open && transport_ && transport_->send_keepalive();
}

void TcpConnection::resume_reading() {
  if (!reading_paused_) return;
  reading_paused_ = false;
  // hold_while_paused()'s wait, if any, ends (and the timer says so again).
  if (state_ == State::open && linger_timer_.expiry() == std::chrono::steady_clock::time_point::max())
    linger_timer_.expires_at(std::chrono::steady_clock::time_point{});
  if (state_ == State::handshaking) return;  // reading begins with the connection
  if (stops_reading()) return;  // full output: reading comes back once it drains
  // A wait still queued goes on as if never paused; a read being handled
  // (a reply written at once, its completion resuming) decides in on_read.
  // Input that came while paused may have been signalled already: read first, wait after.
  if (reading_ == Reading::idle && state_ != State::closed) post_read();
}

// Reading is "wait until readable, then read what is there": a read that
// leaves nothing over has drained the socket, and the next one waits for
// input instead of trying a read that would only say EAGAIN (one system call
// saved per message). How the wait learns of input is input_'s business
// (connection_input.hpp); each way tells of input that arrives after a read
// that left nothing, so none is missed between the read and the wait queued
// after it. Where reading (re)starts after a gap (start, resume) it reads first.
void TcpConnection::do_read() {
  reading_ = Reading::waiting;
  input_->wait(shared_from_this());
}

void TcpConnection::post_read() {
  reading_ = Reading::waiting;
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->on_readable({}); });
}

bool TcpConnection::on_readable(const boost::system::error_code& ec) {
  if (reading_ == Reading::waiting) reading_ = Reading::idle;
  if (state_ == State::closed) return false;
  if (ec) {
    if (ec == asio::error::operation_aborted) return false;
    finish({CloseReason::Kind::io_error, ec.message(), ec});
    return true;
  }
  // Paused while this wait was queued (from a timer, another completion):
  // the input stays in the socket, and the handler's buffer stays as it is
  // (a session may be writing from it); resume_reading() reads first. Output
  // that reached high water from outside a read (a reply from a timer, another
  // loop) stops reading the same way, until it drains. A closing connection
  // reads on, to see the peer's end.
  if (stops_reading() && state_ == State::open) {
    hold_while_paused();
    return false;
  }
  return read_now();
}

void TcpConnection::hold_while_paused() {
  // Paused by the handler with nothing pending (no read wait, no write in
  // flight: an answer it will give later, from a timer or another loop),
  // nothing would own the connection and it would go unclosed: a wait that
  // never ends owns it until resume_reading() or the close.
  if (!reading_paused_ || state_ != State::open || reading_ != Reading::idle || queue_.in_flight()) return;
  if (linger_timer_.expiry() == std::chrono::steady_clock::time_point::max()) return;  // held already
  linger_timer_.expires_at(std::chrono::steady_clock::time_point::max());
  linger_timer_.async_wait([self = shared_from_this()](const boost::system::error_code&) {});
}

bool TcpConnection::read_now() {
  bool read = false;
  for (;;) {
    switch (read_once()) {
      case Read::nothing: return read;
      case Read::done: return true;
      case Read::again:
        read = true;
        if (state_ == State::closed) return true;
        break;
    }
  }
}

TcpConnection::Read TcpConnection::read_once() {
  const std::span<std::byte> buf = handler_->read_buffer();
  boost::system::error_code ec;
  const std::size_t n = input_->read_some(buf, ec);
  if (ec && (ec == asio::error::would_block || ec == asio::error::try_again)) {  // ec first: the comparisons are calls
    do_read();
    return Read::nothing;
  }
  // A full buffer, or input (or the end) the input knows is left, means
  // "read again" rather than "wait for the next input".
  return on_read(ec, n, !ec && (n == buf.size() || input_->left_over()));
}

TcpConnection::Read TcpConnection::on_read(const boost::system::error_code& ec, std::size_t n, bool more) {
  if (state_ == State::closed) return Read::done;
  if (ec) {
    on_read_error(ec);
    return Read::done;
  }
  active_ = true;
  // Until the decision below: a resume, or output that drains in a write
  // completed on the spot, queues no read of its own.
  reading_ = Reading::handling;
  // Input that arrives after close() still reaches the handler (a client that has
  // finished sending reads the server's last replies); its sends are refused.
  {
    const Corked corked(*this);  // replies to everything in this read leave in one write
    handler_->on_data(*this, n);
  }
  // The cork's end flushed, and a flush that completed at once can finish a closing connection.
  if (state_ == State::closed) return Read::done;
  reading_ = Reading::idle;
  if (stops_reading()) {
    hold_while_paused();
    return Read::done;
  }
  if (!more) {
    do_read();
    return Read::done;
  }
  // More is left: read again, after the loop's other work. Bytes in the
  // loop's shared io_uring buffers are read now instead: left until the
  // batch ends, they would be copied once more, to the connection's spill.
  if (input_->holds_shared_buffers()) return Read::again;
  post_read();
  return Read::done;
}

void TcpConnection::on_read_error(const boost::system::error_code& ec) {
  if (transport_ && !ended_in_band_) {
    const StreamTransport::End end = transport_->ended_in_band();
    if (end != StreamTransport::End::none) return end_in_band(end, ec);
  }
  if (ec == asio::error::eof) {
    reading_ = Reading::ended;
    // After our FIN the peer's FIN completes a graceful close; before it, the
    // peer hung up first: flush what is queued, then close.
    if (state_ == State::half_closed) return finish(std::move(pending_reason_));
    if (state_ == State::open) pending_reason_ = {CloseReason::Kind::peer_closed, {}};
    if (queue_.queued_bytes() == 0 && built_in_place_ == 0) return finish(std::move(pending_reason_));
    state_ = State::flushing;
    return;
  }
  if (ec == asio::error::operation_aborted) return;
  finish({CloseReason::Kind::io_error, ec.message(), ec});
}

namespace {
// What a transport that closes in band tells the peer for each reason of ours;
// nothing for the peer's own end, an I/O error or a failed handshake.
std::optional<StreamTransport::Goodbye> goodbye_for(CloseReason::Kind kind) noexcept {
  using Goodbye = StreamTransport::Goodbye;
  switch (kind) {
    case CloseReason::Kind::local_close:
    case CloseReason::Kind::peer_going_away: return Goodbye::done;
    case CloseReason::Kind::shutdown: return Goodbye::going_away;
    case CloseReason::Kind::heartbeat_timeout: return Goodbye::peer_silent;
    case CloseReason::Kind::idle_timeout: return Goodbye::idle;
    case CloseReason::Kind::slow_consumer: return Goodbye::slow_consumer;
    case CloseReason::Kind::protocol_error: return Goodbye::bad_input;
    default: return std::nullopt;
  }
}
}  // namespace

void TcpConnection::close(CloseReason reason) {
  if (state_ == State::handshaking) return finish(std::move(reason));  // nothing was sent or taken yet
  if (state_ != State::open) return;
  if (const auto goodbye = goodbye_for(reason.kind); goodbye && transport_)
    transport_->say_goodbye(*goodbye, reason.detail, false);  // carried by shutdown_send(), after the queue
  pending_reason_ = std::move(reason);
  state_ = State::flushing;
  maybe_flush();
  // A flush that finished at once has already half-closed from on_write.
  if (state_ == State::flushing && !queue_.in_flight()) half_close();
}

void TcpConnection::half_close() {
  if (reading_ == Reading::ended) return finish(std::move(pending_reason_));  // the peer's FIN already came
  state_ = State::half_closed;
  if (transport_) transport_->shutdown_send();
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  linger_timer_.expires_after(kLingerTimeout);
  linger_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (!ec && self->state_ == State::half_closed) self->finish(std::move(self->pending_reason_));
  });
}

void TcpConnection::end_in_band(StreamTransport::End end, const boost::system::error_code& ec) {
  ended_in_band_ = true;
  if (state_ == State::open) {
    pending_reason_ = end == StreamTransport::End::protocol_error ? CloseReason{CloseReason::Kind::protocol_error, ec.message(), ec}
                                                                   : CloseReason{CloseReason::Kind::peer_closed, {}};
    state_ = State::flushing;
    maybe_flush();  // what is queued still goes (a transport may drop what follows its last word)
    if (state_ == State::closed) return;
    if (state_ == State::flushing && !queue_.in_flight()) half_close();
    if (state_ == State::closed) return;
  }
  // Flushing, or half-closed already: read on until the peer's end (or the
  // linger timeout), first what the transport holds.
  do_read();
}

void TcpConnection::drain() {
  if (state_ == State::handshaking) return finish({CloseReason::Kind::shutdown, "draining"});
  if (state_ == State::open) handler_->on_drain(*this);
}

void TcpConnection::abort(CloseReason reason) {
  if (state_ == State::closed) return;
  if (const auto goodbye = goodbye_for(reason.kind); goodbye && transport_ && state_ != State::handshaking)
    transport_->say_goodbye(*goodbye, reason.detail, true);
  finish(std::move(reason));
}

void TcpConnection::finish(CloseReason reason) {
  if (state_ == State::closed) return;
  state_ = State::closed;
  close_kind_ = reason.kind;
  linger_timer_.cancel();
  slow_timer_.cancel();
  idle_timer_.cancel();
  input_->stop();  // before the close: an io_uring receive holds the socket open until cancelled
  close_without_cancel(socket_);  // on io_uring, a close that cancels nothing
  if (own_wait_) close_without_cancel(*own_wait_);
  reason.unsent_bytes = queue_.queued_bytes() + std::exchange(built_in_place_, 0);
  queue_.clear();
  handler_->on_close(*this, reason);
  if (close_observer_) close_observer_(*this);
}

namespace detail {

bool ConnectionInput::ready(TcpConnection& connection, const boost::system::error_code& ec) {
  return connection.on_readable(ec);
}

bool ConnectionInput::worth_reading(TcpConnection& connection) { return connection.input_->worth_reading(); }

bool ConnectionInput::writing(const TcpConnection& connection) noexcept { return connection.queue_.in_flight(); }

ConnectionInput::Kind ConnectionInput::kind_of(const TcpConnection& connection) noexcept {
  return connection.input_->kind();
}

}  // namespace detail

}  // namespace volley::net
