#include <volley/net/reconnecting_client.hpp>

#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <boost/asio/post.hpp>

#include <volley/net/close_without_cancel.hpp>
#include <volley/net/tcp_connect.hpp>

namespace volley::net {

namespace asio = boost::asio;

ReconnectingClient::ReconnectingClient(asio::io_context& loop, ReconnectingClientOptions options,
                                       Callbacks callbacks)
    : loop_(loop),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)),
      validator_(options_.make_codec()),
      rng_(options_.jitter_seed),
      retry_timer_(loop),
      connect_timer_(loop),
      home_timer_(loop) {
  if (options_.servers.empty()) configured_.push_back(configure(options_.host, options_.port));
  for (const std::string& text : options_.servers) {
    std::string host;
    std::uint16_t port = 0;
    if (!split_server_address(text, host, port))
      throw std::invalid_argument("volley: server \"" + text + "\" is neither HOST:PORT nor a Unix address");
    configured_.push_back(configure(host, port));
  }
}

ReconnectingClient::Configured ReconnectingClient::configure(const std::string& host, std::uint16_t port) {
  Configured c{host, port, std::nullopt};
  if (auto unix_address = parse_unix_address(host)) {
    c.literal = Target{unix_address->text(), std::move(unix_address), {}};
    return c;
  }
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (!ec) c.literal = Target{endpoint_text({address, port}), std::nullopt, {address, port}};
  return c;  // a name otherwise: resolved
}

ReconnectingClient::~ReconnectingClient() {
  // Handlers still queued on the loop see alive_ expired and touch nothing.
  alive_.reset();
  callbacks_ = {};
  stopping_ = true;
  if (resolver_) resolver_->cancel();
  if (socket_) close_without_cancel(*socket_);  // a connect in flight
  if (probe_) close_without_cancel(*probe_);
  if (connection_) connection_->abort({CloseReason::Kind::local_close, "client destroyed"});
}

void ReconnectingClient::start() {
  // The first resolution blocks (once, here); later ones run while the client waits.
  std::vector<std::vector<Target>> resolved(configured_.size());
  asio::ip::tcp::resolver resolver(loop_);
  for (std::size_t i = 0; i < configured_.size(); ++i) {
    if (configured_[i].literal) continue;
    boost::system::error_code ec;
    const auto results = resolver.resolve(configured_[i].host, std::to_string(configured_[i].port),
                                          asio::ip::tcp::resolver::numeric_service, ec);
    if (ec) resolve_error_ = ec;
    for (const auto& entry : results) resolved[i].push_back({endpoint_text(entry.endpoint()), std::nullopt, entry.endpoint()});
  }
  use_targets(targets_from(resolved));
  connect();
}

std::vector<ReconnectingClient::Target> ReconnectingClient::targets_from(
    const std::vector<std::vector<Target>>& resolved) const {
  std::vector<Target> targets;
  const auto add = [&targets](const Target& t) {
    for (const Target& known : targets)
      if (known.address == t.address) return;  // two names for one address: tried once
    targets.push_back(t);
  };
  for (std::size_t i = 0; i < configured_.size(); ++i) {
    if (configured_[i].literal) add(*configured_[i].literal);
    for (const Target& t : resolved[i]) add(t);
  }
  return targets;
}

void ReconnectingClient::use_targets(std::vector<Target> targets) {
  // The resolver found nothing this time: stale addresses beat none.
  if (targets.empty() && !targets_.empty()) return;
  const bool same = picker_ && targets.size() == targets_.size() &&
                    std::equal(targets.begin(), targets.end(), targets_.begin(),
                               [](const Target& a, const Target& b) { return a.address == b.address; });
  if (same) return;  // the picker keeps what it knows of each
  targets_ = std::move(targets);
  picker_.emplace(std::max<std::size_t>(targets_.size(), 1), options_.server_policy, options_.backoff,
                  options_.jitter_seed);
  target_ = picker_->first();
}

void ReconnectingClient::resolve_again() {
  if (resolver_) return;  // already on it
  const bool any_name = std::any_of(configured_.begin(), configured_.end(), [](const Configured& c) { return !c.literal; });
  if (!any_name) return;
  resolver_ = std::make_shared<asio::ip::tcp::resolver>(loop_);
  resolve_from(0, std::make_shared<std::vector<std::vector<Target>>>(configured_.size()));
}

void ReconnectingClient::resolve_from(std::size_t i, std::shared_ptr<std::vector<std::vector<Target>>> resolved) {
  while (i < configured_.size() && configured_[i].literal) ++i;
  if (i == configured_.size()) {
    resolver_.reset();
    pending_targets_ = targets_from(*resolved);  // used before the next attempt, not during one
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  resolver_->async_resolve(configured_[i].host, std::to_string(configured_[i].port),
                           asio::ip::tcp::resolver::numeric_service,
                           [this, alive, i, resolved](const boost::system::error_code& ec,
                                                      const asio::ip::tcp::resolver::results_type& results) {
                             if (alive.expired() || ec == asio::error::operation_aborted) return;
                             if (ec) resolve_error_ = ec;
                             for (const auto& entry : results)
                               (*resolved)[i].push_back({endpoint_text(entry.endpoint()), std::nullopt, entry.endpoint()});
                             resolve_from(i + 1, resolved);
                           });
}

ServerStats& ReconnectingClient::stats_of(const std::string& address) {
  for (ServerStats& s : stats_.servers)
    if (s.address == address) return s;
  stats_.servers.push_back({address, 0, 0});
  return stats_.servers.back();
}

void ReconnectingClient::connect() {
  socket_ = std::make_unique<asio::ip::tcp::socket>(loop_);
  connect_timed_out_ = false;
  std::weak_ptr<bool> alive = alive_;
  if (targets_.empty()) {  // no name resolved yet
    socket_.reset();
    const std::error_code why = resolve_error_ ? resolve_error_ : std::make_error_code(std::errc::host_unreachable);
    asio::post(loop_, [this, alive, why] {
      if (!alive.expired() && !stopping_) attempt_failed(why);
    });
    return;
  }
  const Target& target = targets_[target_];
  server_ = target.address;
  if (target.unix_socket) {
    // A Unix connect is done (or refused) at once; its outcome is handled on
    // the loop's next turn, as a TCP connect's would be.
    std::error_code error;
    const int fd = connect_unix(*target.unix_socket, error);
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
  socket_->async_connect(target.endpoint, [this, alive](const boost::system::error_code& ec) {
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
    attempt_failed(connect_timed_out_ ? std::make_error_code(std::errc::timed_out) : std::error_code(ec));
    return;
  }
  boost::system::error_code local_error, remote_error;
  if (!targets_[target_].unix_socket && socket_->local_endpoint(local_error) == socket_->remote_endpoint(remote_error) &&
      !local_error && !remote_error) {
    // Nobody listens on the port and the kernel picked that very port as the
    // source: TCP's simultaneous open connected the socket to itself. It would
    // hold the port the server needs; drop it and try again.
    socket_.reset();
    attempt_failed(std::make_error_code(std::errc::connection_refused));
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

void ReconnectingClient::attempt_failed(const std::error_code& why) {
  ++stats_.failed_attempts;
  if (!targets_.empty()) ++stats_of(server_).failed_attempts;
  schedule_reconnect(picker_->after_failed_attempt(target_, Clock::now(), draw()), why);
}

void ReconnectingClient::schedule_reconnect(ServerPicker::Next next, const std::error_code& why) {
  target_ = next.server;
  if (why && callbacks_.on_connect_failed) callbacks_.on_connect_failed(why, next.delay);
  // A wait is a round's end (or a lost connection): time to ask the resolver again.
  if (next.delay.count() > 0 || !why) resolve_again();
  std::weak_ptr<bool> alive = alive_;
  retry_timer_.expires_after(next.delay);
  retry_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || stopping_) return;
    if (pending_targets_) use_targets(*std::exchange(pending_targets_, std::nullopt));
    connect();
  });
}

SendResult ReconnectingClient::send(std::span<const std::byte> payload) {
  if (stopping_) return SendResult::closed;
  // Straight to the connection only when nothing older waits in the outbox: order is kept.
  if (connected() && outbox_.empty() && !session_->congested()) {
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
  while (!outbox_.empty() && connected() && !session_->congested()) {
    if (session_->send(outbox_.front()) != SendResult::sent) break;
    outbox_bytes_ -= outbox_.front().size();
    outbox_.pop_front();
  }
}

void ReconnectingClient::stop() {
  stopping_ = true;
  retry_timer_.cancel();
  connect_timer_.cancel();
  home_timer_.cancel();
  if (socket_) close_without_cancel(*socket_);
  if (probe_) close_without_cancel(*probe_);
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
  ++stats_of(server_).connects;
  if (!last_opened_.empty() && last_opened_ != server_) ++stats_.failovers;
  last_opened_ = server_;
  picker_->opened(target_);
  if (const TcpConnection* c = session.connection(); c != nullptr && c->transport() != nullptr)
    if (c->transport()->resumed_session()) ++stats_.resumed_connects;
  session_opened_ = true;
  if (options_.return_home_after.count() > 0 && target_ != picker_->first()) check_home();
  if (callbacks_.on_open) callbacks_.on_open();
  drain_outbox();
}

void ReconnectingClient::check_home() {
  std::weak_ptr<bool> alive = alive_;
  home_timer_.expires_after(options_.return_home_after);
  home_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || stopping_ || !connected() || target_ == picker_->first()) return;
    probe_home();
  });
}

void ReconnectingClient::probe_home() {
  const Target& home = targets_[picker_->first()];
  if (home.unix_socket) {  // answered at once
    std::error_code error;
    const int fd = connect_unix(*home.unix_socket, error);
    if (fd < 0) return check_home();
    ::close(fd);
    return leave(Leaving::home, {CloseReason::Kind::local_close, "back to its own server"});
  }
  std::weak_ptr<bool> alive = alive_;
  probe_ = std::make_unique<asio::ip::tcp::socket>(loop_);
  probe_->async_connect(home.endpoint, [this, alive](const boost::system::error_code& ec) {
    if (alive.expired()) return;
    probe_.reset();
    home_timer_.cancel();  // the probe's deadline
    if (stopping_ || !connected()) return;
    if (ec) return check_home();
    leave(Leaving::home, {CloseReason::Kind::local_close, "back to its own server"});
  });
  home_timer_.expires_after(options_.connect_timeout);
  home_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (!ec && !alive.expired() && probe_) close_without_cancel(*probe_);  // completes the connect with an error
  });
}

void ReconnectingClient::leave(Leaving why, CloseReason reason) {
  if (leaving_ != Leaving::no || session_ == nullptr) return;
  leaving_ = why;
  ++(why == Leaving::goodbye ? stats_.goodbyes : stats_.returns);
  session_->close(std::move(reason));
}

void ReconnectingClient::on_message(Session& /*session*/, const Message& message) {
  if (callbacks_.on_message) callbacks_.on_message(message);
}

void ReconnectingClient::on_backpressure(Session& /*session*/, bool congested) {
  if (!congested) drain_outbox();
  if (callbacks_.on_backpressure) callbacks_.on_backpressure(congested);
}

void ReconnectingClient::on_goodbye(Session& /*session*/) {
  leave(Leaving::goodbye, {CloseReason::Kind::peer_going_away, "the server said goodbye: it is draining"});
}

void ReconnectingClient::on_close(Session& /*session*/, const CloseReason& reason) {
  session_ = nullptr;
  const Leaving left = std::exchange(leaving_, Leaving::no);
  home_timer_.cancel();
  if (probe_) close_without_cancel(*probe_);
  if (reason.kind == CloseReason::Kind::handshake_failed || !session_opened_) {
    // Never connected (the handshake failed, or stop() ended it): a failed
    // attempt, not a disconnect.
    asio::post(loop_, [c = std::move(connection_)] {});
    if (stopping_) {
      ++stats_.failed_attempts;
      return;
    }
    attempt_failed(reason.error ? reason.error : std::make_error_code(std::errc::connection_aborted));
    return;
  }
  ++stats_.disconnects;
  stats_.unsent_bytes_lost += reason.unsent_bytes;
  // The connection is mid-call (this runs inside it): let it go on the next turn of the loop.
  asio::post(loop_, [c = std::move(connection_)] {});
  if (callbacks_.on_close) callbacks_.on_close(reason);
  if (stopping_) return;
  switch (left) {
    case Leaving::goodbye: return schedule_reconnect(picker_->after_goodbye(target_, Clock::now()), {});
    case Leaving::home: return schedule_reconnect({picker_->first(), {}}, {});
    case Leaving::no: return schedule_reconnect(picker_->after_lost_connection(target_, Clock::now(), draw()), {});
  }
}

}  // namespace volley::net
