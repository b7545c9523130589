#pragma once
// The RPC frame as a session framing: a message is one whole RPC frame (header
// and body, as RpcClient and RpcServer write them), the keepalive is a
// header-only frame with the reserved message id kKeepaliveMessageId, and
// the goodbye (a draining server's "go elsewhere") one with kGoodbyeMessageId.
#include <memory>

#include <volley/net/session_codec.hpp>
#include <volley/rpc/frame.hpp>

namespace volley::rpc {

inline constexpr std::uint32_t kKeepaliveMessageId = 0xFFFFFFFEu;
inline constexpr std::uint32_t kGoodbyeMessageId = 0xFFFFFFFDu;

std::unique_ptr<net::SessionCodec> make_rpc_codec(std::size_t max_body = kDefaultMaxBody);

}  // namespace volley::rpc
