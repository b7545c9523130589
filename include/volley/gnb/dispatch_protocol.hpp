#pragma once
// The gNB protocol for dispatch::Dispatcher: handlers per message type, taking
// the body, a view (volley/gnb/views.hpp) or a serial-decoded struct.
//   dispatch::Dispatcher<gnb::GnbProtocol> d;
//   d.on<gnb::ControlView>(0x1001, [](const gnb::ControlView& c) { ... });
#include <cstdint>
#include <optional>
#include <span>

#include <volley/dispatch/dispatcher.hpp>
#include <volley/gnb/protocol.hpp>
#include <volley/gnb/views.hpp>
#include <volley/net/message.hpp>
#include <volley/wire/byte_order.hpp>

namespace volley::gnb {

// Whole gNB frames (as a gNB session delivers them): the id is the type, the
// body what follows the header; the length field must match the message.
struct GnbProtocol {
  using Id = std::uint16_t;
  static std::optional<dispatch::Envelope<Id>> open(std::span<const std::byte> message) noexcept {
    if (message.size() < kHeaderSize) return std::nullopt;
    const std::uint32_t length = wire::load_u32_be(message.data() + 2);
    if (length != message.size() - kHeaderSize) return std::nullopt;
    return dispatch::Envelope<Id>{wire::load_u16_be(message.data()), message.subspan(kHeaderSize)};
  }
  // A message from a gNB session: its codec read and checked the header, so
  // the type and body are taken as they are. The body sits right after the
  // header only when a gNB codec delimited it; any other message (a gNB frame
  // carried as a checked-frame payload) is opened from its bytes.
  static std::optional<dispatch::Envelope<Id>> open(const net::Message& message) noexcept {
    if (!net::body_follows_header(message, kHeaderSize)) return open(message.bytes);
    return dispatch::Envelope<Id>{static_cast<Id>(message.id), message.body};
  }
};

}  // namespace volley::gnb
