#include <volley/net/session_codec.hpp>

#include <algorithm>
#include <array>
#include <cstring>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/checked.hpp>
#include <volley/wire/error.hpp>
#include <volley/wire/gnb.hpp>
#include <volley/wire/gnb_decoder.hpp>

namespace volley::net {

namespace {

class CheckedCodec final : public SessionCodec {
 public:
  explicit CheckedCodec(std::size_t max_payload)
      : decoder_(max_payload + wire::checked::kHeaderSize), heartbeat_(wire::checked::heartbeat_frame()),
        max_payload_(max_payload) {}

  std::span<std::byte> prepare() override { return decoder_.prepare(); }
  void commit(std::size_t n) override { decoder_.commit(n); }
  std::size_t buffered() const override { return decoder_.buffered(); }

  Inbound next() override {
    using wire::checked::DecodeStatus;
    const wire::checked::DecodeResult r = decoder_.next();
    switch (r.status) {
      case DecodeStatus::need_more: return {};
      case DecodeStatus::rejected: return {Inbound::Kind::rejected, {}, r.error};
      case DecodeStatus::frame: break;
    }
    if (r.frame.type == wire::checked::FrameType::heartbeat) return {Inbound::Kind::heartbeat, {}, {}};
    return {Inbound::Kind::message, r.frame.payload, {}};
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
  std::size_t max_payload() const override { return max_payload_; }

 private:
  wire::checked::FrameDecoder decoder_;
  std::array<std::byte, wire::checked::kHeaderSize> heartbeat_;
  std::size_t max_payload_;
};

class GnbCodec final : public SessionCodec {
 public:
  std::span<std::byte> prepare() override { return decoder_.prepare(); }
  void commit(std::size_t n) override { decoder_.commit(n); }
  std::size_t buffered() const override { return decoder_.failed() ? 0 : decoder_.buffered(); }

  Inbound next() override {
    using wire::gnb::DecodeStatus;
    if (decoder_.take_keepalive()) return {Inbound::Kind::heartbeat, {}, {}};
    const std::span<const std::byte> before = decoder_.readable();
    const wire::gnb::DecodeResult r = decoder_.next();
    switch (r.status) {
      case DecodeStatus::need_more: return {};
      case DecodeStatus::failed:
        return {Inbound::Kind::failed, before.first(std::min(before.size(), wire::gnb::kHeaderSize)), r.error};
      case DecodeStatus::rejected: return {Inbound::Kind::rejected, before.first(r.frame.wire_size()), r.error};
      case DecodeStatus::frame: break;
    }
    // The message is the whole frame, header included, as the sender gave it.
    // (no_error_ is copied: a default-constructed error_code calls into the
    // library for its category, once per frame.)
    return {Inbound::Kind::message, before.first(r.frame.wire_size()), no_error_};
  }

  std::size_t frame_header(std::span<const std::byte> payload, std::span<std::byte, kMaxHeader> /*header*/,
                           std::error_code& ec) const override {
    ec.clear();
    if (payload.size() < wire::gnb::kHeaderSize) {
      ec = wire::make_error_code(wire::Errc::length_below_header);
    } else {
      const std::uint16_t type = wire::load_u16_be(payload.data());
      const std::uint32_t length = wire::load_u32_be(payload.data() + 2);
      const auto index = wire::gnb::type_index(type);
      if (!index) {
        ec = wire::make_error_code(wire::Errc::unknown_type);
      } else if (length != payload.size() - wire::gnb::kHeaderSize) {
        ec = wire::make_error_code(wire::Errc::length_mismatch);
      } else if (length > wire::gnb::kTypes[*index].max_body) {
        ec = wire::make_error_code(wire::Errc::body_too_long);
      } else if (length < wire::gnb::kTypes[*index].min_body) {
        ec = wire::make_error_code(wire::Errc::body_too_short);
      }
    }
    return 0;
  }

  std::span<const std::byte> heartbeat() const override { return keepalive_; }
  std::size_t max_payload() const override { return wire::gnb::kMaxFrameSize; }

 private:
  wire::gnb::FrameDecoder decoder_;
  std::array<std::byte, wire::gnb::kKeepaliveSize> keepalive_{};
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

std::unique_ptr<SessionCodec> make_gnb_codec() { return std::make_unique<GnbCodec>(); }

}  // namespace volley::net
