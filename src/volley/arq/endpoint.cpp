#include <volley/arq/endpoint.hpp>

namespace volley::arq {

namespace {
FecConfig with_conversation(FecConfig config, std::uint32_t conversation) {
  config.conversation = conversation;
  return config;
}
}  // namespace

ArqEndpoint::ArqEndpoint(const SenderConfig& sender, const ReceiverConfig& receiver, std::optional<FecConfig> fec)
    : conversation_(receiver.conversation),
      sender_(sender),
      receiver_(receiver),
      fec_decoder_(FecDecoderConfig{.conversation = receiver.conversation}) {
  if (fec) fec_encoder_.emplace(with_conversation(*fec, sender.conversation));
}

void ArqEndpoint::on_datagram(std::span<const std::byte> packet, Nanos now, const Transmit& transmit,
                              const Deliver& deliver) {
  const Transmit out = [&](std::span<const std::byte> p) {
    bytes_sent_ += p.size();
    transmit(p);
  };
  const auto to_receiver = [&](std::span<const std::byte> p) {
    receiver_.on_packet(p, now, out);
    while (receiver_.receive(message_)) deliver(message_);
  };
  // Routed by the type byte; each packet is decoded (its checksum computed) once.
  switch (peek_type(packet).value_or(PacketType::data)) {
    case PacketType::repair:
      peer_sends_repairs_ = true;
      fec_decoder_.on_repair(packet, to_receiver, out);
      return;
    case PacketType::report:
      if (fec_encoder_) fec_encoder_->on_report(packet);
      else unexpected_reports_ += 1;
      return;
    case PacketType::ack:
      sender_.on_packet(decode(packet), now);
      return;
    case PacketType::data:  // or no type at all: the receiver counts it as bad
      break;
  }
  const Decoded d = decode(packet);
  if (peer_sends_repairs_ && d.error == PacketError::none && !d.is_ack && d.data.conversation == conversation_)
    fec_decoder_.on_data_packet(packet, d.data.sequence, to_receiver);
  receiver_.on_packet(d, now, out);
  while (receiver_.receive(message_)) deliver(message_);
}

void ArqEndpoint::poll(Nanos now, const Transmit& transmit) {
  const Transmit out = [&](std::span<const std::byte> p) {
    bytes_sent_ += p.size();
    transmit(p);
  };
  if (!fec_encoder_) {
    sender_.poll(now, out);
    receiver_.poll(now, out);
    return;
  }
  std::uint64_t groups = fec_encoder_->stats().groups;
  const auto protect_closed_group = [&] {
    if (fec_encoder_->stats().groups == groups) return;
    groups = fec_encoder_->stats().groups;
    sender_.protected_at(fec_encoder_->last_group(), now);
  };
  // Acks are not protected: the next one carries the same news.
  sender_.poll(now, [&](std::span<const std::byte> p) {
    out(p);
    fec_encoder_->on_data_sent(p, now, out);
    protect_closed_group();
  });
  receiver_.poll(now, out);
  fec_encoder_->poll(now, out);
  protect_closed_group();
}

std::optional<Nanos> ArqEndpoint::next_timeout() const {
  std::optional<Nanos> next = sender_.next_timeout();
  if (fec_encoder_)
    if (const auto f = fec_encoder_->next_timeout(); f && (!next || *f < *next)) next = f;
  return next;
}

}  // namespace volley::arq
