#pragma once
// Typed dispatch of gNB frames: each frame becomes a small view (no copy) held in
// a std::variant, and std::visit calls the handler's overload for that type.
// Nothing here allocates.
#include <cstdint>
#include <span>
#include <variant>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/gnb.hpp>

namespace volley::dispatch {

struct ControlView {
  std::uint32_t transaction_id;
  std::span<const std::byte> body;  // whole body, id included (the checksum covers it)
};
struct AckView {
  std::uint32_t transaction_id;
};
struct NackView {
  std::uint32_t transaction_id;
  std::uint16_t cause;
};
struct AckChecksumView {
  std::uint32_t transaction_id;
  std::uint32_t checksum;
};
struct DataView {
  std::span<const std::byte> body;
};

using MessageView = std::variant<ControlView, AckView, NackView, AckChecksumView, DataView>;

// `frame` must be one the FrameDecoder accepted (status frame): its body already
// satisfies the type's minimum size, so the fixed fields are there.
inline MessageView to_view(const wire::gnb::Frame& frame) noexcept {
  using wire::load_u16_be;
  using wire::load_u32_be;
  using wire::gnb::MessageType;
  const std::byte* b = frame.body.data();
  switch (frame.type) {
    case MessageType::control: return ControlView{load_u32_be(b), frame.body};
    case MessageType::ack: return AckView{load_u32_be(b)};
    case MessageType::nack: return NackView{load_u32_be(b), load_u16_be(b + 4)};
    case MessageType::ack_checksum: return AckChecksumView{load_u32_be(b), load_u32_be(b + 4)};
    case MessageType::data: break;
  }
  return DataView{frame.body};
}

// The usual helper to build a visitor from lambdas.
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

template <class Handler>
decltype(auto) dispatch(const wire::gnb::Frame& frame, Handler&& handler) {
  return std::visit(std::forward<Handler>(handler), to_view(frame));
}

}  // namespace volley::dispatch
