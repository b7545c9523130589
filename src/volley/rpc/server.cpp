#include <volley/rpc/server.hpp>

#include <spdlog/spdlog.h>

#include <volley/rpc/session_codec.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/error.hpp>

namespace volley::rpc {

void make_error_frame(std::uint32_t sequence, ErrorCode code, const std::string& message, std::vector<std::byte>& out) {
  const RpcError error{static_cast<std::uint32_t>(code), message};
  out.resize(kHeaderSize + serial::encoded_size(error));
  serial::encode(error, std::span(out).subspan(kHeaderSize));
  write_header(out.data(), sequence, static_cast<std::uint32_t>(out.size() - kHeaderSize), kErrorMessageId);
}

bool RpcServer::answer(std::uint32_t sequence, std::uint32_t message_id, std::span<const std::byte> body,
                       std::vector<std::byte>& out) const {
  const auto it = handlers_.find(message_id);
  if (it == handlers_.end()) {
    make_error_frame(sequence, ErrorCode::unknown_message_id, "no handler for message id " + std::to_string(message_id),
                     out);
    return false;
  }
  try {
    const std::uint32_t reply_id = it->second(body, out);
    write_header(out.data(), sequence, static_cast<std::uint32_t>(out.size() - kHeaderSize), reply_id);
    return true;
  } catch (const BadRequest& e) {
    make_error_frame(sequence, ErrorCode::bad_request, "request does not decode: " + e.reason, out);
  } catch (const std::exception& e) {
    make_error_frame(sequence, ErrorCode::handler_failed, std::string("handler failed: ") + e.what(), out);
  } catch (...) {
    make_error_frame(sequence, ErrorCode::handler_failed, "handler failed", out);
  }
  return false;
}

namespace {

class ServerStream final : public net::StreamHandler {
 public:
  explicit ServerStream(const RpcServer& server) : server_(server) {}

  std::span<std::byte> read_buffer() override { return decoder_.prepare(); }

  void on_data(net::TcpConnection& c, std::size_t n) override {
    decoder_.commit(n);
    Frame frame{};
    for (;;) {
      switch (decoder_.next(frame)) {
        case FrameDecoder::Status::need_more: return;
        case FrameDecoder::Status::failed:
          spdlog::warn("rpc: {}: body size over the maximum, closing", c.peer());
          c.close({net::CloseReason::Kind::protocol_error, "rpc body size over the maximum",
                   wire::make_error_code(wire::Errc::length_over_maximum)});
          return;
        case FrameDecoder::Status::frame:
          server_.answer(frame.sequence, frame.message_id, frame.body, reply_);
          c.send(reply_);  // corked: the replies of one read leave in one write
          break;
      }
    }
  }

  void on_close(net::TcpConnection&, const net::CloseReason&) override {}

 private:
  const RpcServer& server_;
  FrameDecoder decoder_;
  std::vector<std::byte> reply_;
};

// Requests arrive as whole frames (header first) from the session's RPC codec.
class ServerSessionEvents final : public net::SessionEvents {
 public:
  ServerSessionEvents(const RpcServer& server, RpcServerStats* stats, std::mutex* stats_mutex)
      : server_(server), stats_(stats != nullptr ? *stats : own_), stats_mutex_(stats != nullptr ? stats_mutex : nullptr) {
    count([this] { ++stats_.sessions; });
  }

  // The session's RPC codec read the header: sequence, message id and body come with the message.
  void on_message(net::Session& s, const net::Message& request) override {
    const std::uint32_t sequence = request.sequence;
    const bool answered = server_.answer(sequence, request.id, request.body, reply_);
    bool too_large = false;
    if (s.send(reply_) == net::SendResult::invalid) {
      // Too large to frame: the caller hears why instead of waiting for its timeout.
      make_error_frame(sequence, ErrorCode::handler_failed, "reply over the maximum body size", reply_);
      too_large = true;
      s.send(reply_);
    }
    count([&] {
      ++stats_.requests;
      stats_.error_replies += (answered ? 0 : 1) + (too_large ? 1 : 0);
    });
    // The reply was queued; while the queue is over high water, read no more
    // requests rather than refuse their replies.
    if (s.congested()) s.pause_input();
  }

  void on_backpressure(net::Session& s, bool congested) override {
    if (!congested) s.resume_input();
  }

  void on_protocol_error(net::Session& s, const std::error_code& error, std::span<const std::byte>,
                         bool closing) override {
    spdlog::warn("rpc: {}: {} ({})", s.connection()->peer(), error.message(),
                 closing ? "closing" : "frame dropped");
  }

  void on_close(net::Session& s, const net::CloseReason& reason) override {
    count([&] {
      stats_.traffic += s.stats();
      ++stats_.closes[static_cast<std::size_t>(reason.kind)];
    });
  }

 private:
  template <class F>
  void count(F&& f) {
    if (stats_mutex_ == nullptr) return f();
    const std::lock_guard lock(*stats_mutex_);
    f();
  }

  const RpcServer& server_;
  RpcServerStats own_;  // where a session made without stats counts
  RpcServerStats& stats_;
  std::mutex* stats_mutex_;  // shared with other sessions counting into stats_ from other threads
  std::vector<std::byte> reply_;
};

}  // namespace

std::unique_ptr<net::StreamHandler> RpcServer::make_stream_handler() const {
  return std::make_unique<ServerStream>(*this);
}

std::unique_ptr<net::StreamHandler> RpcServer::make_session(const net::SessionOptions& options, std::size_t max_body,
                                                            RpcServerStats* stats, std::mutex* stats_mutex) const {
  return std::make_unique<net::Session>(make_rpc_codec(max_body), options,
                                        std::make_unique<ServerSessionEvents>(*this, stats, stats_mutex));
}

}  // namespace volley::rpc
