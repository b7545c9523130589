#include <volley/arq/sender.hpp>

#include <algorithm>

namespace volley::arq {

const char* to_string(Scheme scheme) noexcept {
  switch (scheme) {
    case Scheme::stop_and_wait: return "stop-and-wait";
    case Scheme::go_back_n: return "go-back-n";
    case Scheme::selective_repeat: return "selective-repeat";
  }
  return "?";
}

ArqSender::ArqSender(const SenderConfig& config)
    : config_(config),
      rto_(config.rto),
      next_sequence_(config.initial_sequence),
      peer_window_(config.window) {
  if (config_.scheme == Scheme::stop_and_wait) config_.window = 1;
  config_.window = std::max<std::uint32_t>(1, config_.window);
}

bool ArqSender::send(std::span<const std::byte> message) {
  if (closed_ || failed() || message.size() > config_.max_payload || queue_.size() >= config_.send_buffer) return false;
  queue_.emplace_back(message.begin(), message.end());
  stats_.messages_accepted += 1;
  return true;
}

void ArqSender::close() { closed_ = true; }

std::uint32_t ArqSender::effective_window() const noexcept {
  // A closed receive window still lets one packet out: it probes for the
  // window to reopen (the receiver acks it, or drops it and says why).
  return std::max<std::uint32_t>(1, std::min(config_.window, peer_window_));
}

void ArqSender::transmit_packet(Outstanding& o, Nanos now, const Transmit& transmit, bool retransmission) {
  o.transmissions += 1;
  o.deadline = now + rto_.rto();
  if (retransmission) {
    stats_.retransmissions += 1;
  } else {
    o.first_sent = now;
    stats_.packets_sent += 1;
  }
  stats_.bytes_on_wire += o.packet.size();
  transmit(o.packet);
}

void ArqSender::acknowledge_through(std::uint32_t cumulative, Nanos now) {
  bool progress = false;
  while (!in_flight_.empty() && seq_before(in_flight_.front().sequence, cumulative)) {
    const Outstanding& o = in_flight_.front();
    if (o.transmissions == 1 && !o.acked) rto_.sample(now - o.first_sent);  // Karn: never from a resend
    in_flight_.pop_front();
    progress = true;
  }
  if (progress) rto_.clear_backoff();
}

void ArqSender::on_packet(std::span<const std::byte> bytes, Nanos now) { on_packet(decode(bytes), now); }

void ArqSender::on_packet(const Decoded& d, Nanos now) {
  if (d.error != PacketError::none || !d.is_ack || d.ack.conversation != config_.conversation) {
    stats_.bad_packets += 1;
    return;
  }
  const AckPacket& ack = d.ack;
  stats_.acks_received += 1;
  silent_timeouts_ = 0;
  backed_off_at_.reset();
  peer_window_ = ack.window;
  // An ack from the future (beyond anything sent) is ignored as malformed.
  if (seq_before(next_sequence_, ack.cumulative)) {
    stats_.bad_packets += 1;
    return;
  }
  acknowledge_through(ack.cumulative, now);
  if (config_.scheme != Scheme::selective_repeat) return;

  // Selective acks, and fast retransmit of holes that later packets have passed.
  std::uint32_t passed = 0;
  for (auto it = in_flight_.rbegin(); it != in_flight_.rend(); ++it) {
    if (ack.sacked(it->sequence)) {
      if (!it->acked) {
        it->acked = true;
        if (it->transmissions == 1) rto_.sample(now - it->first_sent);
      }
      ++passed;
    } else if (!it->acked && config_.fast_retransmit_after && passed >= config_.fast_retransmit_after &&
               !it->fast_retransmitted) {
      it->fast_retransmitted = true;
      fast_pending_.push_back(it->sequence);
    }
  }
}

ArqSender::Outstanding* ArqSender::find(std::uint32_t sequence) noexcept {
  if (in_flight_.empty() || seq_before(sequence, in_flight_.front().sequence)) return nullptr;
  const std::uint32_t offset = sequence - in_flight_.front().sequence;
  return offset < in_flight_.size() ? &in_flight_[offset] : nullptr;  // sequences are contiguous
}

void ArqSender::protected_at(std::span<const std::uint32_t> sequences, Nanos now) {
  for (const std::uint32_t sequence : sequences)
    if (Outstanding* o = find(sequence); o != nullptr && !o->acked) o->deadline = std::max(o->deadline, now + rto_.rto());
}

void ArqSender::on_timeout(Nanos now, const Transmit& transmit) {
  const bool selective = config_.scheme == Scheme::selective_repeat;
  bool expired = false;
  if (selective) {
    for (const auto& o : in_flight_) expired = expired || (!o.acked && o.deadline <= now);
  } else {
    expired = !in_flight_.empty() && in_flight_.front().deadline <= now;
  }
  if (!expired) return;
  stats_.timeouts += 1;
  // Back off first, so the resends wait the longer timeout. Once per RTO
  // interval, as with TCP's single timer: packets of one window expiring one
  // after another are one loss event, not many.
  if (!backed_off_at_ || now - *backed_off_at_ >= rto_.rto()) {
    backed_off_at_ = now;
    rto_.backoff();
    if (++silent_timeouts_ > config_.dead_after) {
      error_ = make_error_code(Errc::peer_unreachable);
      return;
    }
  }
  for (auto& o : in_flight_) {
    if (selective && (o.acked || o.deadline > now)) continue;
    o.fast_retransmitted = false;
    transmit_packet(o, now, transmit, true);  // selective: the expired ones; otherwise go back N (or the one)
  }
}

void ArqSender::poll(Nanos now, const Transmit& transmit) {
  if (failed()) return;
  for (const std::uint32_t sequence : fast_pending_) {
    Outstanding* o = find(sequence);
    if (o == nullptr || o->acked) continue;  // acknowledged since the hole was seen
    stats_.fast_retransmits += 1;
    transmit_packet(*o, now, transmit, true);
  }
  fast_pending_.clear();
  on_timeout(now, transmit);
  if (failed()) return;
  while (in_flight_.size() < effective_window() && (!queue_.empty() || (closed_ && !fin_sent_))) {
    Outstanding o{next_sequence_++, {}, now, now, 0, false, false};
    if (!queue_.empty()) {
      encode_data({config_.conversation, o.sequence, false, queue_.front()}, o.packet);
      queue_.pop_front();
    } else {
      encode_data({config_.conversation, o.sequence, true, {}}, o.packet);
      fin_sent_ = true;
    }
    in_flight_.push_back(std::move(o));
    transmit_packet(in_flight_.back(), now, transmit, false);
  }
}

std::optional<Nanos> ArqSender::next_timeout() const {
  if (failed()) return std::nullopt;
  std::optional<Nanos> next;
  for (const auto& o : in_flight_) {
    if (o.acked) continue;
    if (!next || o.deadline < *next) next = o.deadline;
    if (config_.scheme != Scheme::selective_repeat) break;  // only the oldest has a timer
  }
  return next;
}

}  // namespace volley::arq
