#pragma once
// The RPC frame as a session framing: a message is one whole RPC frame (header
// and body, as RpcClient and RpcServer write them), and the keepalive is a
// header-only frame with the reserved message id kKeepaliveMessageId.
#include <memory>

#include <volley/net/session_codec.hpp>
#include <volley/rpc/frame.hpp>

namespace volley::rpc {

inline constexpr std::uint32_t kKeepaliveMessageId = 0xFFFFFFFEu;

std::unique_ptr<net::SessionCodec> make_rpc_codec(std::size_t max_body = kDefaultMaxBody);

}  // namespace volley::rpc
