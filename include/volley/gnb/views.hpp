#pragma once
// Typed dispatch of gNB frames: each frame becomes a small view (no copy) held in
// a std::variant, and std::visit calls the handler's overload for that type
// (build one from lambdas with dispatch::Overloaded). Nothing here allocates.
#include <cstdint>
#include <optional>
#include <span>
#include <variant>

#include <volley/dispatch/overloaded.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/gnb/protocol.hpp>

namespace volley::gnb {

namespace detail {
// The body fits the type's layout (docs/PROTOCOL.md): what a decoder checked
// already for frames it accepted, checked again for bodies from elsewhere.
inline bool fits(gnb::MessageType type, std::span<const std::byte> body) noexcept {
  const auto index = gnb::type_index(static_cast<std::uint16_t>(type));
  return index && body.size() >= gnb::kTypes[*index].min_body && body.size() <= gnb::kTypes[*index].max_body;
}
}  // namespace detail

// Each view can also be made from a body alone (from_body: nullopt when the
// body breaks its type's layout), which makes it a handler type for
// dispatch::Dispatcher<gnb::GnbProtocol> (volley/gnb/dispatch_protocol.hpp).
struct ControlView {
  std::uint32_t transaction_id;
  std::span<const std::byte> body;  // whole body, id included (the checksum covers it)
  static std::optional<ControlView> from_body(std::span<const std::byte> b) noexcept {
    if (!detail::fits(gnb::MessageType::control, b)) return std::nullopt;
    return ControlView{wire::load_u32_be(b.data()), b};
  }
};
struct AckView {
  std::uint32_t transaction_id;
  static std::optional<AckView> from_body(std::span<const std::byte> b) noexcept {
    if (!detail::fits(gnb::MessageType::ack, b)) return std::nullopt;
    return AckView{wire::load_u32_be(b.data())};
  }
};
struct NackView {
  std::uint32_t transaction_id;
  std::uint16_t cause;
  static std::optional<NackView> from_body(std::span<const std::byte> b) noexcept {
    if (!detail::fits(gnb::MessageType::nack, b)) return std::nullopt;
    return NackView{wire::load_u32_be(b.data()), wire::load_u16_be(b.data() + 4)};
  }
};
struct AckChecksumView {
  std::uint32_t transaction_id;
  std::uint32_t checksum;
  static std::optional<AckChecksumView> from_body(std::span<const std::byte> b) noexcept {
    if (!detail::fits(gnb::MessageType::ack_checksum, b)) return std::nullopt;
    return AckChecksumView{wire::load_u32_be(b.data()), wire::load_u32_be(b.data() + 4)};
  }
};
struct DataView {
  std::span<const std::byte> body;
  static std::optional<DataView> from_body(std::span<const std::byte> b) noexcept {
    if (!detail::fits(gnb::MessageType::data, b)) return std::nullopt;
    return DataView{b};
  }
};

using MessageView = std::variant<ControlView, AckView, NackView, AckChecksumView, DataView>;

// `frame` must be one the FrameDecoder accepted (status frame): its body already
// satisfies the type's minimum size, so the fixed fields are there.
inline MessageView to_view(const gnb::Frame& frame) noexcept {
  using wire::load_u16_be;
  using wire::load_u32_be;
  using gnb::MessageType;
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

template <class Handler>
decltype(auto) dispatch(const gnb::Frame& frame, Handler&& handler) {
  return std::visit(std::forward<Handler>(handler), to_view(frame));
}

}  // namespace volley::gnb
