#include <volley/arq/receiver.hpp>

#include <algorithm>

namespace volley::arq {

ArqReceiver::ArqReceiver(const ReceiverConfig& config) : config_(config), expected_(config.initial_sequence) {
  config_.window = std::clamp<std::uint32_t>(config_.window, 1, 65535);
  advertised_ = window();
}

std::uint16_t ArqReceiver::window() const noexcept {
  const std::size_t used = ready_.size() + static_cast<std::size_t>(std::count_if(
                                               held_.begin(), held_.end(), [](const auto& h) { return h.has_value(); }));
  const std::size_t room = config_.receive_buffer > used ? config_.receive_buffer - used : 0;
  return static_cast<std::uint16_t>(std::min<std::size_t>(room, config_.window));
}

bool ArqReceiver::accept_in_order(std::vector<std::byte>&& payload, bool fin) {
  if (fin) {
    fin_delivered_ = true;
  } else {
    if (ready_.size() >= config_.receive_buffer) return false;
    ready_.push_back(std::move(payload));
    stats_.delivered += 1;
  }
  ++expected_;
  return true;
}

void ArqReceiver::on_packet(std::span<const std::byte> bytes, Nanos now, const Transmit& transmit) {
  on_packet(decode(bytes), now, transmit);
}

void ArqReceiver::on_packet(const Decoded& d, Nanos /*now*/, const Transmit& transmit) {
  if (d.error != PacketError::none || d.is_ack || d.data.conversation != config_.conversation) {
    stats_.bad_packets += 1;  // a corrupt packet says nothing trustworthy: no ack
    return;
  }
  stats_.packets_received += 1;
  const DataPacket& p = d.data;
  if (fin_delivered_ || seq_before(p.sequence, expected_)) {
    stats_.duplicates += 1;  // its ack was lost: ack again
  } else if (p.sequence == expected_) {
    if (!held_.empty() && held_.front()) {
      stats_.duplicates += 1;  // already held, waiting for room
    } else if (!accept_in_order({p.payload.begin(), p.payload.end()}, p.fin)) {
      stats_.outside_window += 1;  // the application is behind: no room
    } else if (!held_.empty()) {
      held_.pop_front();  // the slot of the packet just taken
      drain_held();
    }
  } else if (config_.scheme != Scheme::selective_repeat) {
    stats_.out_of_order_discarded += 1;
  } else {
    const std::uint32_t offset = p.sequence - expected_;
    if (offset >= config_.window || window() == 0) {
      stats_.outside_window += 1;
    } else {
      if (held_.size() <= offset) held_.resize(offset + 1);
      if (held_[offset]) {
        stats_.duplicates += 1;
      } else {
        held_[offset] = Held{{p.payload.begin(), p.payload.end()}, p.fin};
      }
    }
  }
  send_ack(transmit);
}

void ArqReceiver::drain_held() {
  while (!held_.empty() && held_.front()) {
    if (!accept_in_order(std::move(held_.front()->payload), held_.front()->fin)) return;  // no room yet
    held_.pop_front();
  }
}

void ArqReceiver::send_ack(const Transmit& transmit) {
  AckPacket ack;
  ack.conversation = config_.conversation;
  ack.cumulative = expected_;
  ack.window = window();
  for (std::size_t i = 1; i < held_.size() && i <= kSackBits; ++i)
    if (held_[i]) ack.set_sacked(expected_ + static_cast<std::uint32_t>(i));
  advertised_ = ack.window;
  encode_ack(ack, scratch_);
  stats_.acks_sent += 1;
  stats_.bytes_on_wire += scratch_.size();
  transmit(scratch_);
}

bool ArqReceiver::receive(std::vector<std::byte>& message) {
  if (ready_.empty()) return false;
  message = std::move(ready_.front());
  ready_.pop_front();
  drain_held();  // room again for what waited behind a full buffer
  return true;
}

void ArqReceiver::poll(Nanos /*now*/, const Transmit& transmit) {
  if (advertised_ == 0 && window() > 0) send_ack(transmit);
}

}  // namespace volley::arq
