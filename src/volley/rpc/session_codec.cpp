#include <volley/rpc/session_codec.hpp>

#include <array>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/error.hpp>

namespace volley::rpc {
namespace {

class RpcCodec final : public net::SessionCodec {
 public:
  explicit RpcCodec(std::size_t max_body) : decoder_(max_body), max_body_(max_body) {
    write_header(keepalive_.data(), 0, 0, kKeepaliveMessageId);
    write_header(goodbye_.data(), 0, 0, kGoodbyeMessageId);
  }

  std::span<std::byte> prepare() override { return decoder_.prepare(); }
  void commit(std::size_t n) override { decoder_.commit(n); }
  std::size_t buffered() const override { return decoder_.buffered(); }

  net::Inbound next() override {
    Frame f{};
    switch (decoder_.next(f)) {
      case FrameDecoder::Status::need_more: return {};
      case FrameDecoder::Status::failed:
        return {net::Inbound::Kind::failed, {}, wire::make_error_code(wire::Errc::length_over_maximum)};
      case FrameDecoder::Status::frame: break;
    }
    if (f.message_id == kKeepaliveMessageId && f.body.empty()) return {net::Inbound::Kind::heartbeat, {}, {}};
    if (f.message_id == kGoodbyeMessageId && f.body.empty()) return {net::Inbound::Kind::goodbye, {}, {}};
    // The header sits right before the body in the decoder's buffer: hand out the whole frame.
    return {net::Inbound::Kind::message,
            {.bytes = {f.body.data() - kHeaderSize, kHeaderSize + f.body.size()},
             .id = f.message_id,
             .sequence = f.sequence,
             .body = f.body},
            {}};
  }

  std::size_t frame_header(std::span<const std::byte> payload, std::span<std::byte, kMaxHeader> /*header*/,
                           std::error_code& ec) const override {
    ec.clear();
    if (payload.size() < kHeaderSize) {
      ec = wire::make_error_code(wire::Errc::length_below_header);
    } else if (wire::load_u32_be(payload.data() + 4) != payload.size() - kHeaderSize) {
      ec = wire::make_error_code(wire::Errc::length_mismatch);
    } else if (payload.size() - kHeaderSize > max_body_) {
      ec = wire::make_error_code(wire::Errc::length_over_maximum);
    }
    return 0;
  }

  std::span<const std::byte> heartbeat() const override { return keepalive_; }
  std::span<const std::byte> goodbye() const override { return goodbye_; }
  std::size_t max_payload() const override { return kHeaderSize + max_body_; }

 private:
  FrameDecoder decoder_;
  std::size_t max_body_;
  std::array<std::byte, kHeaderSize> keepalive_{};
  std::array<std::byte, kHeaderSize> goodbye_{};
};

}  // namespace

std::unique_ptr<net::SessionCodec> make_rpc_codec(std::size_t max_body) { return std::make_unique<RpcCodec>(max_body); }

}  // namespace volley::rpc
