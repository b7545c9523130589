#include <volley/rpc/client.hpp>

#include <volley/net/tcp_connect.hpp>

namespace volley::rpc {

namespace asio = boost::asio;

namespace {

class ClientCategory final : public boost::system::error_category {
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
    }
    return "unknown rpc error";
  }
};

class ClientStream final : public net::StreamHandler {
 public:
  explicit ClientStream(RpcClient& client) : client_(client) {}
  std::span<std::byte> read_buffer() override { return decoder_.prepare(); }
  void on_data(net::TcpConnection& c, std::size_t n) override {
    decoder_.commit(n);
    Frame frame{};
    for (;;) {
      const auto status = decoder_.next(frame);
      if (status == FrameDecoder::Status::need_more) return;
      if (status == FrameDecoder::Status::failed) {
        c.abort({net::CloseReason::Kind::protocol_error, "rpc reply body over the maximum"});
        return;
      }
      client_.on_frame(frame);
    }
  }
  void on_close(net::TcpConnection&, const net::CloseReason& reason) override {
    client_.on_closed(std::string(net::to_string(reason.kind)) + (reason.detail.empty() ? "" : ": " + reason.detail));
  }

 private:
  RpcClient& client_;
  FrameDecoder decoder_;
};

}  // namespace

const boost::system::error_category& client_category() noexcept {
  static const ClientCategory category;
  return category;
}

RpcClient::RpcClient(asio::io_context& loop, std::uint32_t first_sequence)
    : loop_(loop), timer_(loop), next_sequence_(first_sequence) {}

RpcClient::~RpcClient() { close(); }

void RpcClient::connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout,
                        boost::system::error_code& ec) {
  auto socket = net::connect_tcp(loop_, host, port, timeout, ec);
  if (ec) return;
  connection_ = std::make_shared<net::TcpConnection>(std::move(socket), std::make_unique<ClientStream>(*this));
  connection_->start();
}

void RpcClient::close() {
  if (connection_) {
    auto c = std::move(connection_);
    c->abort({net::CloseReason::Kind::local_close, {}});  // calls on_closed: pending calls fail
  }
  timer_.cancel();
}

void RpcClient::start_call(std::uint32_t request_id, std::uint32_t reply_id, Clock::duration timeout,
                           Completion complete) {
  if (!connection_ || !connection_->open()) {
    // Fail asynchronously, as an I/O error would: callers never see a completion inside call().
    asio::post(loop_, [complete = std::move(complete)] { complete(ClientErrc::not_connected, {}); });
    return;
  }
  // Wrap-around safe: skip a sequence number still waiting for its reply.
  while (pending_.count(next_sequence_) != 0) ++next_sequence_;
  const std::uint32_t sequence = next_sequence_++;
  write_header(scratch_.data(), sequence, static_cast<std::uint32_t>(scratch_.size() - kHeaderSize), request_id);
  const auto deadline = Clock::now() + timeout;
  pending_.emplace(sequence, Pending{reply_id, deadline, std::move(complete)});
  deadlines_.emplace(deadline, sequence);
  connection_->send(scratch_);
  arm_timer();
}

void RpcClient::on_frame(const Frame& frame) {
  const auto it = pending_.find(frame.sequence);
  if (it == pending_.end()) return;  // timed out already: the late reply is dropped
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
  last_remote_error_ = reason;
  fail_all(ClientErrc::connection_closed);
}

void RpcClient::fail_all(const boost::system::error_code& ec) {
  auto pending = std::move(pending_);
  pending_.clear();
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
    p.complete(ClientErrc::timed_out, {});
  }
  // Drop heap entries of calls that were answered, so the heap does not grow.
  while (!deadlines_.empty() && pending_.count(deadlines_.top().second) == 0) deadlines_.pop();
  arm_timer();
}

}  // namespace volley::rpc
