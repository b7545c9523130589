#include <volley/net/reconnecting_client.hpp>

#include <boost/asio/post.hpp>

#include <volley/net/close_without_cancel.hpp>

namespace volley::net {

namespace asio = boost::asio;

ReconnectingClient::ReconnectingClient(asio::io_context& loop, ReconnectingClientOptions options,
                                       Callbacks callbacks)
    : loop_(loop),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      validator_(options_.make_codec()),
      backoff_(options_.backoff),
      rng_(options_.jitter_seed),
      retry_timer_(loop),
      connect_timer_(loop) {}

ReconnectingClient::~ReconnectingClient() {
  // Handlers still queued on the loop see alive_ expired and touch nothing.
  alive_.reset();
  callbacks_ = {};
  stopping_ = true;
  if (socket_) close_without_cancel(*socket_);  // a connect in flight
  if (connection_) connection_->abort({CloseReason::Kind::local_close, "client destroyed"});
}

void ReconnectingClient::start() {
  unix_ = parse_unix_address(options_.host);
  if (unix_) return connect();
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(options_.host, ec);
  if (!ec) {
    endpoint_ = {address, options_.port};
  } else {
    // Names are resolved once, here: a reconnect must not block the loop on DNS.
    asio::ip::tcp::resolver resolver(loop_);
    const auto results = resolver.resolve(options_.host, std::to_string(options_.port));
    endpoint_ = *results.begin();
  }
  connect();
}

void ReconnectingClient::connect() {
  socket_ = std::make_unique<asio::ip::tcp::socket>(loop_);
  connect_timed_out_ = false;
  std::weak_ptr<bool> alive = alive_;
  if (unix_) {
    // A Unix connect is done (or refused) at once; its outcome is handled on
    // the loop's next turn, as a TCP connect's would be.
    std::error_code error;
    const int fd = connect_unix(*unix_, error);
    boost::system::error_code ec = error;
    if (fd >= 0) socket_->assign(asio::ip::tcp::v4(), fd, ec);
    asio::post(loop_, [this, alive, ec] {
      if (!alive.expired()) on_connect(ec);
    });
    return;
  }
  connect_timer_.expires_after(options_.connect_timeout);
  connect_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || !socket_) return;
    connect_timed_out_ = true;
    close_without_cancel(*socket_);  // completes the connect with an error
  });
  socket_->async_connect(endpoint_, [this, alive](const boost::system::error_code& ec) {
    if (alive.expired()) return;
    on_connect(ec);
  });
}

void ReconnectingClient::on_connect(const boost::system::error_code& ec) {
  connect_timer_.cancel();
  if (stopping_) {
    socket_.reset();
    return;
  }
  if (ec || connect_timed_out_) {  // a connect that won the race with its timeout is closed all the same
    socket_.reset();
    ++stats_.failed_attempts;
    schedule_reconnect(connect_timed_out_ ? std::make_error_code(std::errc::timed_out) : std::error_code(ec));
    return;
  }
  boost::system::error_code local_error, remote_error;
  if (!unix_ && socket_->local_endpoint(local_error) == socket_->remote_endpoint(remote_error) && !local_error && !remote_error) {
    // Nobody listens on the port and the kernel picked that very port as the
    // source: TCP's simultaneous open connected the socket to itself. It would
    // hold the port the server needs; drop it and try again.
    socket_.reset();
    ++stats_.failed_attempts;
    schedule_reconnect(std::make_error_code(std::errc::connection_refused));
    return;
  }
  auto session = std::make_unique<Session>(options_.make_codec(), options_.session, static_cast<SessionEvents&>(*this));
  Session* raw = session.get();
  ConnectionLimits limits = options_.connection_limits;
  limits.handshake_timeout = options_.connect_timeout;
  connection_ = std::make_shared<TcpConnection>(std::move(*socket_), std::move(session), limits,
                                                options_.make_transport ? options_.make_transport() : nullptr);
  socket_.reset();
  session_ = raw;
  session_opened_ = false;
  connection_->start();
}

void ReconnectingClient::schedule_reconnect(const std::error_code& why) {
  const auto delay = backoff_.next(std::uniform_real_distribution<double>(0.0, 1.0)(rng_));
  if (why && callbacks_.on_connect_failed) callbacks_.on_connect_failed(why, delay);
  std::weak_ptr<bool> alive = alive_;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || stopping_) return;
    connect();
  });
}

SendResult ReconnectingClient::send(std::span<const std::byte> payload) {
  if (stopping_) return SendResult::closed;
  // Straight to the connection only when nothing older waits in the outbox: order is kept.
  if (session_ != nullptr && session_->open() && outbox_.empty() && !session_->congested()) {
    const SendResult r = session_->send(payload);
    if (r == SendResult::sent || r == SendResult::invalid) return r;
  }
  std::array<std::byte, SessionCodec::kMaxHeader> header;
  std::error_code ec;
  validator_->frame_header(payload, header, ec);
  if (ec) return SendResult::invalid;
  if (outbox_.size() >= options_.outbox_messages || outbox_bytes_ + payload.size() > options_.outbox_bytes) {
    ++stats_.outbox_refusals;
    return SendResult::outbox_full;
  }
  outbox_.emplace_back(payload.begin(), payload.end());
  outbox_bytes_ += payload.size();
  return SendResult::queued;
}

void ReconnectingClient::drain_outbox() {
  while (!outbox_.empty() && session_ != nullptr && session_->open() && !session_->congested()) {
    if (session_->send(outbox_.front()) != SendResult::sent) break;
    outbox_bytes_ -= outbox_.front().size();
    outbox_.pop_front();
  }
}

void ReconnectingClient::stop() {
  stopping_ = true;
  retry_timer_.cancel();
  connect_timer_.cancel();
  if (socket_) close_without_cancel(*socket_);
  drain_outbox();  // what an open connection can still take
  stats_.outbox_dropped += outbox_.size();
  outbox_.clear();
  outbox_bytes_ = 0;
  // The connection, not the session: during a transport's handshake the
  // session has not opened and could not close it.
  if (connection_) connection_->close({CloseReason::Kind::local_close, {}});
}

void ReconnectingClient::on_open(Session& session) {
  ++stats_.connects;
  if (const TcpConnection* c = session.connection(); c != nullptr && c->transport() != nullptr)
    if (c->transport()->resumed_session()) ++stats_.resumed_connects;
  session_opened_ = true;
  backoff_.reset();
  if (callbacks_.on_open) callbacks_.on_open();
  drain_outbox();
}

void ReconnectingClient::on_message(Session& /*session*/, const Message& message) {
  if (callbacks_.on_message) callbacks_.on_message(message);
}

void ReconnectingClient::on_backpressure(Session& /*session*/, bool congested) {
  if (!congested) drain_outbox();
  if (callbacks_.on_backpressure) callbacks_.on_backpressure(congested);
}

void ReconnectingClient::on_close(Session& /*session*/, const CloseReason& reason) {
  session_ = nullptr;
  if (reason.kind == CloseReason::Kind::handshake_failed || !session_opened_) {
    // Never connected (the handshake failed, or stop() ended it): a failed
    // attempt, not a disconnect.
    ++stats_.failed_attempts;
    asio::post(loop_, [c = std::move(connection_)] {});
    if (!stopping_) schedule_reconnect(reason.error ? reason.error : std::make_error_code(std::errc::connection_aborted));
    return;
  }
  ++stats_.disconnects;
  stats_.unsent_bytes_lost += reason.unsent_bytes;
  // The connection is mid-call (this runs inside it): let it go on the next turn of the loop.
  asio::post(loop_, [c = std::move(connection_)] {});
  if (callbacks_.on_close) callbacks_.on_close(reason);
  if (!stopping_) schedule_reconnect({});
}

}  // namespace volley::net
