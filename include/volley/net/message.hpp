#pragma once
// A message as its framing delimited it, handed on with what the codec already
// read from the header so that nobody parses it again (dispatch::Dispatcher
// takes it as it is). Every view is valid only during the call it is passed to.
#include <cstddef>
#include <cstdint>
#include <span>

namespace volley::net {

struct Message {
  // What the sender passed to send(): the whole frame for framings whose
  // header is the user's (gNB, RPC), the payload for the checked frame.
  std::span<const std::byte> bytes{};
  // The framing's message id: the gNB type, the RPC message id; 0 where the
  // framing has none (the checked frame).
  std::uint32_t id = 0;
  // The RPC sequence that pairs a reply with its request; 0 elsewhere.
  std::uint32_t sequence = 0;
  // What follows the framing's header: the gNB or RPC body; the checked
  // frame's payload (equal to bytes).
  std::span<const std::byte> body{};
};

// Whether `message` was delimited by a codec whose header is `header_size`
// bytes: its body sits right after that header, to the end of its bytes. A
// dispatcher protocol takes such a message's id and body as they are.
inline bool body_follows_header(const Message& message, std::size_t header_size) noexcept {
  return message.bytes.size() >= header_size && message.body.data() == message.bytes.data() + header_size &&
         message.body.size() + header_size == message.bytes.size();
}

}  // namespace volley::net
