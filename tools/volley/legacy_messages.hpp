#pragma once
// The C++11-style dispatch of the gNB handler benchmark, kept as its baseline:
// every frame is copied into a heap-allocated polymorphic message and its type is
// recovered with dynamic_cast. Do not use it for anything else.
#include <cstdint>
#include <memory>
#include <vector>

#include <volley/gnb/views.hpp>
#include <volley/gnb/protocol.hpp>

namespace volley::benchmarks::legacy {

using namespace volley::dispatch;

struct Message {
  explicit Message(std::span<const std::byte> b) : body(b.begin(), b.end()) {}
  virtual ~Message();
  std::vector<std::byte> body;
};
struct ControlMessage final : Message {
  using Message::Message;
};
struct AckMessage final : Message {
  using Message::Message;
};
struct NackMessage final : Message {
  using Message::Message;
};
struct AckChecksumMessage final : Message {
  using Message::Message;
};
struct DataMessage final : Message {
  using Message::Message;
};

std::unique_ptr<Message> make_message(const gnb::Frame& frame);

// Calls handler(view) for the message's dynamic type, the same views the variant
// path produces, so both paths do the same work after dispatch.
template <class Handler>
void dispatch(const Message& m, Handler&& handler) {
  using wire::load_u16_be;
  using wire::load_u32_be;
  const std::byte* b = m.body.data();
  if (dynamic_cast<const ControlMessage*>(&m) != nullptr) {
    handler(gnb::ControlView{load_u32_be(b), m.body});
  } else if (dynamic_cast<const AckMessage*>(&m) != nullptr) {
    handler(gnb::AckView{load_u32_be(b)});
  } else if (dynamic_cast<const NackMessage*>(&m) != nullptr) {
    handler(gnb::NackView{load_u32_be(b), load_u16_be(b + 4)});
  } else if (dynamic_cast<const AckChecksumMessage*>(&m) != nullptr) {
    handler(gnb::AckChecksumView{load_u32_be(b), load_u32_be(b + 4)});
  } else if (dynamic_cast<const DataMessage*>(&m) != nullptr) {
    handler(gnb::DataView{m.body});
  }
}

}  // namespace volley::benchmarks::legacy
