#include <volley/net/session_codec.hpp>

#include <algorithm>
#include <array>
#include <cstring>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/checked.hpp>
#include <volley/wire/error.hpp>

namespace volley::net {

namespace {

class CheckedCodec final : public SessionCodec {
 public:
  explicit CheckedCodec(std::size_t max_payload)
      : decoder_(max_payload + wire::checked::kHeaderSize), heartbeat_(wire::checked::heartbeat_frame()),
        max_payload_(max_payload) {
    wire::store_u24_be(goodbye_.data(), wire::checked::kHeaderSize);
    goodbye_[3] = std::byte{kGoodbyeType};
  }

  std::span<std::byte> prepare() override { return decoder_.prepare(); }
  void commit(std::size_t n) override { decoder_.commit(n); }
  std::size_t buffered() const override { return decoder_.buffered(); }

  // Only a message frame: a heartbeat is next()'s.
  bool next_message(Message& out) override {
    const std::span<const std::byte> in = decoder_.readable();
    if (in.size() < wire::checked::kHeaderSize ||
        in[3] != std::byte{static_cast<std::uint8_t>(wire::checked::FrameType::message)})
      return false;
    const std::optional<wire::checked::Frame> frame = decoder_.take_frame();
    if (!frame) return false;
    out = {.bytes = frame->payload, .body = frame->payload};
    return true;
  }

  Inbound next() override {
    using wire::checked::DecodeStatus;
    // (no_error_ is copied: a default-constructed error_code calls into the
    // library for its category, once per frame.)
    // Most reads of a request-reply stream end here: its one frame taken, nothing left.
    if (decoder_.readable().empty()) return {Inbound::Kind::need_more, {}, no_error_};
    if (Message message; next_message(message)) return {Inbound::Kind::message, message, no_error_};
    if (decoder_.take_frame()) return {Inbound::Kind::heartbeat, {}, no_error_};  // the valid frame it left
    const wire::checked::DecodeResult r = decoder_.next();
    switch (r.status) {
      case DecodeStatus::need_more: return {Inbound::Kind::need_more, {}, no_error_};
      case DecodeStatus::rejected:
        // The goodbye is a type the plain decoder does not know: exactly its five bytes.
        if (r.raw_type == kGoodbyeType && r.raw_length == wire::checked::kHeaderSize && r.raw_checksum == 0)
          return {Inbound::Kind::goodbye, {}, {}};
        return {Inbound::Kind::rejected, {}, r.error};
      case DecodeStatus::frame: break;
    }
    if (r.frame.type == wire::checked::FrameType::heartbeat) return {Inbound::Kind::heartbeat, {}, {}};
    return {Inbound::Kind::message, {.bytes = r.frame.payload, .body = r.frame.payload}, {}};
  }

  std::size_t frame_header(std::span<const std::byte> payload, std::span<std::byte, kMaxHeader> header,
                           std::error_code& ec) const override {
    if (payload.size() > max_payload_) {
      ec = wire::make_error_code(wire::Errc::length_over_maximum);
      return 0;
    }
    const std::size_t total = wire::checked::kHeaderSize + payload.size();
    wire::store_u24_be(header.data(), static_cast<std::uint32_t>(total));
    header[3] = std::byte{static_cast<std::uint8_t>(wire::checked::FrameType::message)};
    header[4] = std::byte{wire::checked::xor_checksum(payload)};
    ec.clear();
    return wire::checked::kHeaderSize;
  }

  std::size_t write_frame(std::span<const std::byte> payload, std::span<std::byte> out,
                          std::error_code& ec) const override {
    if (payload.size() > max_payload_) {
      ec = wire::make_error_code(wire::Errc::length_over_maximum);
      return 0;
    }
    // The XOR is computed while the payload is copied into the write queue.
    return wire::checked::encode(wire::checked::FrameType::message, payload, out, ec);
  }

  std::span<const std::byte> heartbeat() const override { return heartbeat_; }
  std::span<const std::byte> goodbye() const override { return goodbye_; }
  std::size_t max_payload() const override { return max_payload_; }

 private:
  static constexpr std::uint8_t kGoodbyeType = 2;

  wire::checked::FrameDecoder decoder_;
  std::array<std::byte, wire::checked::kHeaderSize> heartbeat_;
  std::array<std::byte, wire::checked::kHeaderSize> goodbye_{};
  std::size_t max_payload_;
  const std::error_code no_error_{};
};

}  // namespace

std::size_t SessionCodec::write_frame(std::span<const std::byte> payload, std::span<std::byte> out,
                                      std::error_code& ec) const {
  const std::size_t header = frame_header(payload, out.first<kMaxHeader>(), ec);
  if (ec) return 0;
  if (!payload.empty()) std::memcpy(out.data() + header, payload.data(), payload.size());
  return header + payload.size();
}

std::unique_ptr<SessionCodec> make_checked_codec(std::size_t max_payload) {
  return std::make_unique<CheckedCodec>(max_payload);
}


}  // namespace volley::net
