#include "legacy_messages.hpp"

namespace volley::benchmarks::legacy {

Message::~Message() = default;

std::unique_ptr<Message> make_message(const gnb::Frame& frame) {
  using gnb::MessageType;
  switch (frame.type) {
    case MessageType::control: return std::make_unique<ControlMessage>(frame.body);
    case MessageType::ack: return std::make_unique<AckMessage>(frame.body);
    case MessageType::nack: return std::make_unique<NackMessage>(frame.body);
    case MessageType::ack_checksum: return std::make_unique<AckChecksumMessage>(frame.body);
    case MessageType::data: break;
  }
  return std::make_unique<DataMessage>(frame.body);
}

}  // namespace volley::benchmarks::legacy
