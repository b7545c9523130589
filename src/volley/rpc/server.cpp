#include <volley/rpc/server.hpp>

#include <spdlog/spdlog.h>

namespace volley::rpc {

void make_error_frame(std::uint32_t sequence, ErrorCode code, const std::string& message, std::vector<std::byte>& out) {
  const RpcError error{static_cast<std::uint32_t>(code), message};
  out.resize(kHeaderSize + serial::encoded_size(error));
  serial::encode(error, std::span(out).subspan(kHeaderSize));
  write_header(out.data(), sequence, static_cast<std::uint32_t>(out.size() - kHeaderSize), kErrorMessageId);
}

void RpcServer::answer(std::uint32_t sequence, std::uint32_t message_id, std::span<const std::byte> body,
                       std::vector<std::byte>& out) const {
  const auto it = handlers_.find(message_id);
  if (it == handlers_.end()) {
    make_error_frame(sequence, ErrorCode::unknown_message_id, "no handler for message id " + std::to_string(message_id),
                     out);
    return;
  }
  try {
    const std::uint32_t reply_id = it->second(body, out);
    write_header(out.data(), sequence, static_cast<std::uint32_t>(out.size() - kHeaderSize), reply_id);
  } catch (const BadRequest& e) {
    make_error_frame(sequence, ErrorCode::bad_request, "request does not decode: " + e.reason, out);
  } catch (const std::exception& e) {
    make_error_frame(sequence, ErrorCode::handler_failed, std::string("handler failed: ") + e.what(), out);
  } catch (...) {
    make_error_frame(sequence, ErrorCode::handler_failed, "handler failed", out);
  }
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
          spdlog::warn("rpc: {}:{}: body size over the maximum, closing", c.remote_endpoint().address().to_string(),
                       c.remote_endpoint().port());
          c.close({net::CloseReason::Kind::protocol_error, "rpc body size over the maximum"});
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

}  // namespace

std::unique_ptr<net::StreamHandler> RpcServer::make_stream_handler() const {
  return std::make_unique<ServerStream>(*this);
}

}  // namespace volley::rpc
