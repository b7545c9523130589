#include <volley/rpc/client.hpp>

#include <algorithm>

#include <volley/net/tcp_connect.hpp>
#include <volley/rpc/session_codec.hpp>
#include <volley/wire/byte_order.hpp>

namespace volley::rpc {

namespace asio = boost::asio;

namespace {

class ClientCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "volley.rpc"; }
  std::string message(int value) const override {
    switch (static_cast<ClientErrc>(value)) {
      case ClientErrc::timed_out: return "the call timed out";
      case ClientErrc::connection_closed: return "the connection to the server closed before the reply";
      case ClientErrc::not_connected: return "not connected";
      case ClientErrc::unknown_message_id: return "the server has no handler for this message id";
      case ClientErrc::bad_request: return "the server could not decode the request";
      case ClientErrc::handler_failed: return "the server's handler failed";
      case ClientErrc::bad_reply: return "the reply did not decode as the expected type";
      case ClientErrc::handshake_failed: return "the TLS handshake failed";
      case ClientErrc::overloaded: return "refused: the requests queued for the server are over the high-water mark";
      case ClientErrc::request_too_large: return "refused: the request is over the maximum body size";
    }
    return "unknown rpc error";
  }
};

// Replies arrive from the session's RPC codec with the header read.
// The body rebuilt from its two words, not copied whole (gnb::frame_of says why).
Frame frame_of(const net::Message& reply) { return {reply.sequence, reply.id, {reply.body.data(), reply.body.size()}}; }

class ClientEvents final : public net::SessionEvents {
 public:
  explicit ClientEvents(RpcClient& client) : client_(client) {}
  void on_message(net::Session&, const net::Message& reply) override { client_.on_frame(frame_of(reply)); }
  void on_close(net::Session&, const net::CloseReason& reason) override {
    client_.on_closed(std::string(net::to_string(reason.kind)) + (reason.detail.empty() ? "" : ": " + reason.detail));
  }

 private:
  RpcClient& client_;
};

}  // namespace

const std::error_category& client_category() noexcept {
  static const ClientCategory category;
  return category;
}

RpcClient::RpcClient(asio::io_context& loop, std::uint32_t first_sequence)
    : loop_(loop), timer_(loop), next_sequence_(first_sequence) {}

RpcClient::~RpcClient() { close(); }

void RpcClient::connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout,
                        std::error_code& ec) {
  connect(host, port, timeout, nullptr, ec);
}

void RpcClient::connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout,
                        std::unique_ptr<net::StreamTransport> transport, std::error_code& ec) {
  const auto deadline = Clock::now() + timeout;
  auto socket = net::connect_tcp(loop_, host, port, timeout, ec);
  if (ec) return;
  const bool handshake = transport != nullptr;
  net::ConnectionLimits limits;
  limits.handshake_timeout = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                                      std::chrono::milliseconds(1));
  auto session = std::make_unique<net::Session>(make_rpc_codec(), session_options_, std::make_unique<ClientEvents>(*this));
  session_ = session.get();
  connection_ = std::make_shared<net::TcpConnection>(std::move(socket), std::move(session), limits, std::move(transport));
  connection_->start();
  if (!handshake) return;
  // The handshake's deadline (the connection's own) ends this loop in any case.
  while (connection_ && !connection_->open() && !connection_->closed()) {
    if (loop_.stopped()) loop_.restart();
    loop_.run_one();
  }
  if (!connection_ || !connection_->open()) {
    connection_.reset();
    session_ = nullptr;
    ec = ClientErrc::handshake_failed;
  }
}

void RpcClient::start(net::ReconnectingClientOptions options, InFlightPolicy policy) {
  stopped_ = false;
  policy_ = policy;
  max_waiting_ = options.outbox_messages;
  max_waiting_bytes_ = options.outbox_bytes;
  options.outbox_messages = 0;  // calls wait here, with their deadlines, not as bytes in its outbox
  options.outbox_bytes = 0;
  options.make_codec = [] { return make_rpc_codec(); };
  validator_ = make_rpc_codec();
  net::ReconnectingClient::Callbacks callbacks;
  callbacks.on_message = [this](const net::Message& reply) { on_frame(frame_of(reply)); };
  callbacks.on_open = [this] { send_waiting(); };
  callbacks.on_close = [this](const net::CloseReason& reason) { on_disconnected(reason); };
  callbacks.on_connect_failed = [this](const std::error_code& error, std::chrono::milliseconds) {
    last_remote_error_ = error.message();
  };
  callbacks.on_backpressure = [this](bool congested) {
    if (!congested) send_waiting();
  };
  reconnecting_ = std::make_unique<net::ReconnectingClient>(loop_, std::move(options), std::move(callbacks));
  reconnecting_->start();
}

bool RpcClient::connected() const noexcept {
  const net::Session* s = live_session();
  return s != nullptr && s->open();
}

const net::ReconnectingClientStats* RpcClient::reconnect_stats() const noexcept {
  return reconnecting_ ? &reconnecting_->stats() : nullptr;
}

net::Session* RpcClient::live_session() const noexcept {
  return reconnecting_ ? reconnecting_->session() : session_;
}

bool RpcClient::can_send() const noexcept {
  const net::Session* s = live_session();
  return s != nullptr && s->open() && !s->congested();
}

void RpcClient::close() {
  session_ = nullptr;
  if (connection_) {
    auto c = std::move(connection_);
    c->abort({net::CloseReason::Kind::local_close, {}});  // calls on_closed: pending calls fail
  }
  if (reconnecting_) {
    reconnecting_->stop();
    stopped_ = true;  // it never connects again: later calls are refused, not left to time out
    fail_all(ClientErrc::connection_closed);
  }
  timer_.cancel();
}

void RpcClient::start_call(std::uint32_t request_id, std::uint32_t reply_id, Clock::duration timeout,
                           Completion complete) {
  const auto refuse = [&](ClientErrc why) {
    // Fail asynchronously, as an I/O error would: callers never see a completion inside call().
    asio::post(loop_, [complete = std::move(complete), why] { complete(why, {}); });
  };
  if (stopped_) return refuse(ClientErrc::not_connected);
  if (!reconnecting_) {
    if (session_ == nullptr || !session_->open()) return refuse(ClientErrc::not_connected);
    if (session_->congested()) return refuse(ClientErrc::overloaded);
  }
  // Wrap-around safe: skip a sequence number still waiting for its reply.
  while (pending_.count(next_sequence_) != 0) ++next_sequence_;
  const std::uint32_t sequence = next_sequence_;
  write_header(scratch_.data(), sequence, static_cast<std::uint32_t>(scratch_.size() - kHeaderSize), request_id);
  bool sent = false;
  if (!reconnecting_ || (waiting_.empty() && can_send())) {
    // Straight onto the connection (only when nothing older waits: order is kept).
    switch (reconnecting_ ? reconnecting_->send(scratch_) : session_->send(scratch_)) {
      case net::SendResult::sent: sent = true; break;
      case net::SendResult::invalid: return refuse(ClientErrc::request_too_large);
      case net::SendResult::high_water: return refuse(ClientErrc::overloaded);
      default:
        if (!reconnecting_) return refuse(ClientErrc::not_connected);
    }
  }
  if (!sent) {
    std::array<std::byte, net::SessionCodec::kMaxHeader> header;
    std::error_code invalid;
    validator_->frame_header(scratch_, header, invalid);
    if (invalid) return refuse(ClientErrc::request_too_large);
    if (waiting_.size() >= max_waiting_ || waiting_bytes_ + scratch_.size() > max_waiting_bytes_)
      return refuse(ClientErrc::overloaded);
  }
  Pending p{reply_id, Clock::now() + timeout, std::move(complete), next_order_++, !sent, {}};
  // Kept while it waits, and under replay until its reply: it may have to go again.
  if (!sent || (reconnecting_ && policy_ == InFlightPolicy::replay)) p.frame = scratch_;
  if (p.waiting) {
    waiting_.emplace(p.order, sequence);
    waiting_bytes_ += p.frame.size();
  }
  ++next_sequence_;
  const auto deadline = p.deadline;
  pending_.emplace(sequence, std::move(p));
  deadlines_.emplace(deadline, sequence);
  arm_timer();
}

void RpcClient::forget_waiting(Pending& p) {
  if (!p.waiting) return;
  waiting_.erase(p.order);
  waiting_bytes_ -= p.frame.size();
  p.waiting = false;
}

void RpcClient::send_waiting() {
  while (!waiting_.empty() && can_send()) {
    const auto [order, sequence] = *waiting_.begin();
    Pending& p = pending_.at(sequence);
    if (reconnecting_->send(p.frame) != net::SendResult::sent) break;  // over high water again: wait for the drain
    forget_waiting(p);
    if (policy_ == InFlightPolicy::fail) std::vector<std::byte>().swap(p.frame);
  }
}

void RpcClient::on_disconnected(const net::CloseReason& reason) {
  last_remote_error_ = std::string(net::to_string(reason.kind)) + (reason.detail.empty() ? "" : ": " + reason.detail);
  // The calls that were on the connection, in the order they were made.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> caught;
  for (const auto& [sequence, p] : pending_)
    if (!p.waiting) caught.emplace_back(p.order, sequence);
  std::sort(caught.begin(), caught.end());
  if (policy_ == InFlightPolicy::replay) {
    // Back in line ahead of every call made after them (the order keys say so).
    for (const auto& [order, sequence] : caught) {
      Pending& p = pending_.at(sequence);
      p.waiting = true;
      waiting_.emplace(order, sequence);
      waiting_bytes_ += p.frame.size();
    }
    return;
  }
  for (const auto& [order, sequence] : caught) {
    const auto it = pending_.find(sequence);
    if (it == pending_.end()) continue;  // a completion before it finished another one off
    Pending p = std::move(it->second);
    pending_.erase(it);
    p.complete(ClientErrc::connection_closed, {});
  }
}

void RpcClient::on_frame(const Frame& frame) {
  const auto it = pending_.find(frame.sequence);
  if (it == pending_.end()) return;  // timed out already: the late reply is dropped
  if (it->second.waiting) return;    // sent on a connection that is gone; it waits to go again
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (frame.message_id == kErrorMessageId) {
    RpcError error{};
    std::error_code ec;
    if (!serial::decode(frame.body, error, ec)) return p.complete(ClientErrc::bad_reply, {});
    last_remote_error_ = error.message;
    const auto code = error.code == static_cast<std::uint32_t>(ErrorCode::unknown_message_id) ? ClientErrc::unknown_message_id
                      : error.code == static_cast<std::uint32_t>(ErrorCode::bad_request)  ? ClientErrc::bad_request
                                                                                          : ClientErrc::handler_failed;
    return p.complete(code, {});
  }
  if (frame.message_id != p.reply_id) return p.complete(ClientErrc::bad_reply, {});
  p.complete({}, frame.body);
}

void RpcClient::on_closed(const std::string& reason) {
  session_ = nullptr;
  last_remote_error_ = reason;
  fail_all(ClientErrc::connection_closed);
}

void RpcClient::fail_all(const std::error_code& ec) {
  auto pending = std::move(pending_);
  pending_.clear();
  waiting_.clear();
  waiting_bytes_ = 0;
  deadlines_ = {};
  timer_.cancel();
  armed_for_.reset();
  for (auto& [sequence, p] : pending) p.complete(ec, {});
}

void RpcClient::arm_timer() {
  if (deadlines_.empty()) return;
  const auto when = deadlines_.top().first;
  if (armed_for_ && *armed_for_ <= when) return;
  armed_for_ = when;
  timer_.expires_at(when);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    armed_for_.reset();
    expire();
  });
}

void RpcClient::expire() {
  const auto now = Clock::now();
  while (!deadlines_.empty() && deadlines_.top().first <= now) {
    const auto [deadline, sequence] = deadlines_.top();
    deadlines_.pop();
    const auto it = pending_.find(sequence);
    // Answered already, or the number was reused by a later call with a later deadline.
    if (it == pending_.end() || it->second.deadline != deadline) continue;
    Pending p = std::move(it->second);
    pending_.erase(it);
    forget_waiting(p);
    p.complete(ClientErrc::timed_out, {});
  }
  // Drop heap entries of calls that were answered, so the heap does not grow.
  while (!deadlines_.empty() && pending_.count(deadlines_.top().second) == 0) deadlines_.pop();
  arm_timer();
}

}  // namespace volley::rpc
