#pragma once
// The gNB protocol under a net::Session: a message is a whole gNB frame
// (header and body), checked before it is queued (known type, length field
// equal to the body, within the type's limits); the heartbeat is the six-byte
// keepalive (type 0, length 0) of docs/PROTOCOL.md, taken by the codec and
// never delivered; the goodbye is type 0 with the one-byte body 0x01. Rejected
// frames reach SessionEvents::on_protocol_error with their bytes; a header
// that cannot be trusted hands over its six bytes.
#include <memory>

#include <volley/gnb/protocol.hpp>
#include <volley/net/session_codec.hpp>

namespace volley::gnb {

std::unique_ptr<net::SessionCodec> make_gnb_codec();

// The frame of a gNB session's message, as the codec read it: nothing is parsed
// again. The body is rebuilt from its two words: copied whole, it would be one
// 16-byte load of the two 8-byte stores the codec has just made, a load the
// store buffer cannot forward (it waits for both to land).
inline Frame frame_of(const net::Message& message) noexcept {
  return {static_cast<MessageType>(message.id), {message.body.data(), message.body.size()}};
}

}  // namespace volley::gnb
