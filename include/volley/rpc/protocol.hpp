#pragma once
// RPC frames for typed dispatch (dispatch::Dispatcher<rpc::RpcProtocol>): the
// id is the frame's message id, the body what follows the 12-byte header, and
// the size field must match the message (as an RPC session delivers it).
#include <cstdint>
#include <optional>
#include <span>

#include <volley/dispatch/dispatcher.hpp>
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
};

}  // namespace volley::rpc
