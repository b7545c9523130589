#pragma once
// RPC frames for typed dispatch (dispatch::Dispatcher<rpc::RpcProtocol>): the
// id is the frame's message id, the body what follows the 12-byte header, and
// the size field must match the message (as an RPC session delivers it).
#include <cstdint>
#include <optional>
#include <span>

#include <volley/dispatch/dispatcher.hpp>
#include <volley/net/message.hpp>
#include <volley/rpc/frame.hpp>
#include <volley/wire/byte_order.hpp>

namespace volley::rpc {

struct RpcProtocol {
  using Id = std::uint32_t;
  static std::optional<dispatch::Envelope<Id>> open(std::span<const std::byte> message) noexcept {
    if (message.size() < kHeaderSize) return std::nullopt;
    if (wire::load_u32_be(message.data() + 4) != message.size() - kHeaderSize) return std::nullopt;
    return dispatch::Envelope<Id>{wire::load_u32_be(message.data() + 8), message.subspan(kHeaderSize)};
  }
  // A message from an RPC session: its codec read the header, so the id and
  // body are taken as they are (a message any other codec delimited, whose
  // body is not right after a 12-byte header, is opened from its bytes).
  static std::optional<dispatch::Envelope<Id>> open(const net::Message& message) noexcept {
    if (!net::body_follows_header(message, kHeaderSize)) return open(message.bytes);
    return dispatch::Envelope<Id>{message.id, message.body};
  }
};

}  // namespace volley::rpc
