#include <volley/gnb/session_codec.hpp>

#include <algorithm>
#include <array>

#include <volley/gnb/decoder.hpp>
#include <volley/gnb/protocol.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/error.hpp>

namespace volley::gnb {

namespace {

class GnbCodec final : public net::SessionCodec {
 public:
  std::span<std::byte> prepare() override { return decoder_.prepare(); }
  void commit(std::size_t n) override { decoder_.commit(n); }
  std::size_t buffered() const override { return decoder_.failed() ? 0 : decoder_.buffered(); }

  // The message is the whole frame, header included, as the sender gave it,
  // with the type and body the decoder read. A valid frame's type is never
  // 0x0000, the extensions' type: take_frame() leaves keepalives and goodbyes
  // to next().
  bool next_message(net::Message& out) override {
    const std::span<const std::byte> before = decoder_.readable();
    const std::optional<Frame> frame = decoder_.take_frame();
    if (!frame) return false;
    out = {.bytes = before.first(frame->wire_size()), .id = static_cast<std::uint16_t>(frame->type), .body = frame->body};
    return true;
  }

  net::Inbound next() override {
    switch (decoder_.take_extension()) {
      case FrameDecoder::Extension::none: break;
      case FrameDecoder::Extension::keepalive: return {net::Inbound::Kind::heartbeat, {}, {}};
      case FrameDecoder::Extension::goodbye: return {net::Inbound::Kind::goodbye, {}, {}};
      case FrameDecoder::Extension::partial: return {};
    }
    // (no_error_ is copied: a default-constructed error_code calls into the
    // library for its category.)
    if (net::Message message; next_message(message)) return {net::Inbound::Kind::message, message, no_error_};
    const std::span<const std::byte> before = decoder_.readable();
    const DecodeResult r = decoder_.next();
    switch (r.status) {
      case DecodeStatus::need_more: return {};
      case DecodeStatus::failed:
        return {net::Inbound::Kind::failed, {.bytes = before.first(std::min(before.size(), kHeaderSize))}, r.error};
      case DecodeStatus::rejected:
        return {net::Inbound::Kind::rejected, {.bytes = before.first(r.frame.wire_size())}, r.error};
      case DecodeStatus::frame: break;  // take_frame() would have taken it
    }
    return {net::Inbound::Kind::message,
            {.bytes = before.first(r.frame.wire_size()), .id = static_cast<std::uint16_t>(r.frame.type), .body = r.frame.body},
            no_error_};
  }

  std::size_t frame_header(std::span<const std::byte> payload, std::span<std::byte, kMaxHeader> /*header*/,
                           std::error_code& ec) const override {
    ec.clear();
    if (payload.size() < kHeaderSize) {
      ec = wire::make_error_code(wire::Errc::length_below_header);
    } else {
      const std::uint16_t type = wire::load_u16_be(payload.data());
      const std::uint32_t length = wire::load_u32_be(payload.data() + 2);
      const auto index = type_index(type);
      if (!index) {
        ec = wire::make_error_code(wire::Errc::unknown_type);
      } else if (length != payload.size() - kHeaderSize) {
        ec = wire::make_error_code(wire::Errc::length_mismatch);
      } else if (length > kTypes[*index].max_body) {
        ec = wire::make_error_code(wire::Errc::body_too_long);
      } else if (length < kTypes[*index].min_body) {
        ec = wire::make_error_code(wire::Errc::body_too_short);
      }
    }
    return 0;
  }

  std::span<const std::byte> heartbeat() const override { return keepalive_; }
  std::span<const std::byte> goodbye() const override { return goodbye_; }
  std::size_t max_payload() const override { return kMaxFrameSize; }

 private:
  FrameDecoder decoder_;
  std::array<std::byte, kKeepaliveSize> keepalive_{};
  const std::array<std::byte, kGoodbyeSize> goodbye_{std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0},
                                                     std::byte{0}, std::byte{1}, std::byte{1}};
  const std::error_code no_error_{};
};

}  // namespace

std::unique_ptr<net::SessionCodec> make_gnb_codec() { return std::make_unique<GnbCodec>(); }

}  // namespace volley::gnb
