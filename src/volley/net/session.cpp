#include <volley/net/session.hpp>

#include <fmt/format.h>

namespace volley::net {

const char* to_string(SendResult r) noexcept {
  switch (r) {
    case SendResult::sent: return "sent";
    case SendResult::high_water: return "refused: over the high-water mark";
    case SendResult::closed: return "refused: session closed";
    case SendResult::invalid: return "refused: cannot be framed";
    case SendResult::queued: return "queued in the outbox";
    case SendResult::outbox_full: return "refused: outbox full";
  }
  return "?";
}

Session::Session(std::unique_ptr<SessionCodec> codec, const SessionOptions& options, SessionEvents& events)
    : codec_(std::move(codec)), options_(options), events_(&events) {
  if (options_.low_water == 0 || options_.low_water > options_.high_water) options_.low_water = options_.high_water / 2;
}

Session::Session(std::unique_ptr<SessionCodec> codec, const SessionOptions& options,
                 std::unique_ptr<SessionEvents> events)
    : Session(std::move(codec), options, *events) {
  owned_events_ = std::move(events);
}

void Session::on_open(TcpConnection& connection) {
  connection_ = &connection;
  const auto now = Clock::now();
  last_received_ = last_activity_ = now;
  if (options_.heartbeat_interval.count() > 0) {
    heartbeat_timer_.emplace(connection.get_executor());
    liveness_timer_.emplace(connection.get_executor());
    arm_heartbeat();
    arm_liveness(now + options_.heartbeat_interval * options_.heartbeat_misses);
  }
  if (options_.idle_timeout.count() > 0) {
    idle_timer_.emplace(connection.get_executor());
    arm_idle();
  }
  if (options_.slow_consumer_timeout.count() > 0) slow_timer_.emplace(connection.get_executor());
  events_->on_open(*this);
}

SendResult Session::send(std::span<const std::byte> payload) {
  if (connection_ == nullptr || !connection_->open()) {
    ++stats_.refused_sends;
    return SendResult::closed;
  }
  if (congested_) {
    ++stats_.refused_sends;
    return SendResult::high_water;
  }
  std::array<std::byte, SessionCodec::kMaxHeader> header;
  std::error_code ec;
  const std::size_t header_size = codec_->frame_header(payload, header, ec);
  if (ec) {
    ++stats_.refused_sends;
    return SendResult::invalid;
  }
  connection_->send(std::span<const std::byte>(header.data(), header_size), payload);
  ++stats_.messages_out;
  sent_since_heartbeat_ = true;
  message_activity_ = true;
  if (connection_->queued_bytes() >= options_.high_water) enter_congestion();
  return SendResult::sent;
}

void Session::close(CloseReason reason) {
  if (connection_ != nullptr) connection_->close(std::move(reason));
}

void Session::enter_congestion() {
  congested_ = true;
  ++stats_.high_water_events;
  if (slow_timer_) {
    slow_timer_->expires_after(options_.slow_consumer_timeout);
    slow_timer_->async_wait([this, keep = connection_->shared_from_this()](const boost::system::error_code& ec) {
      if (ec || !congested_ || connection_->closed()) return;
      connection_->abort({CloseReason::Kind::slow_consumer,
                          fmt::format("over {} queued bytes for {} ms", options_.high_water,
                                      options_.slow_consumer_timeout.count())});
    });
  }
  events_->on_backpressure(*this, true);
}

void Session::on_written(TcpConnection& connection, std::size_t /*bytes*/) {
  if (!congested_ || connection.queued_bytes() > options_.low_water) return;
  congested_ = false;
  if (slow_timer_) slow_timer_->cancel();
  events_->on_backpressure(*this, false);
}

void Session::on_data(TcpConnection& /*connection*/, std::size_t n) {
  codec_->commit(n);
  if (liveness_timer_) last_received_ = Clock::now();
  decode_buffered();
}

void Session::decode_buffered() {
  while (!input_paused_ && !connection_->closed()) {
    const Inbound in = codec_->next();
    switch (in.kind) {
      case Inbound::Kind::need_more: return;
      case Inbound::Kind::message:
        ++stats_.messages_in;
        message_activity_ = true;
        events_->on_message(*this, in.payload);
        break;
      case Inbound::Kind::heartbeat: ++stats_.heartbeats_in; break;
      case Inbound::Kind::rejected:
      case Inbound::Kind::failed: {
        ++stats_.protocol_errors;
        const bool closing =
            in.kind == Inbound::Kind::failed || options_.on_protocol_error == SessionOptions::OnProtocolError::close;
        events_->on_protocol_error(*this, in.error, closing);
        if (closing) {
          // Replies to the frames before the bad one still go out; nothing after it is read.
          input_paused_ = true;
          connection_->close({CloseReason::Kind::protocol_error, in.error.message()});
          return;
        }
        break;
      }
    }
  }
}

void Session::pause_input() {
  input_paused_ = true;
  if (connection_ != nullptr) connection_->pause_reading();
}

void Session::resume_input() {
  if (!input_paused_ || connection_ == nullptr || !connection_->open()) return;
  input_paused_ = false;
  {
    const TcpConnection::Corked corked(*connection_);  // replies to the buffered frames leave together
    decode_buffered();
  }
  if (!input_paused_ && connection_->open()) connection_->resume_reading();
}

void Session::arm_heartbeat() {
  // Ticks at half the interval: a tick that finds nothing sent since the last
  // one sends a heartbeat, so the peer never waits longer than an interval.
  heartbeat_timer_->expires_after(options_.heartbeat_interval / 2);
  heartbeat_timer_->async_wait([this, keep = connection_->shared_from_this()](const boost::system::error_code& ec) {
    if (ec || !connection_->open()) return;
    if (sent_since_heartbeat_) {
      sent_since_heartbeat_ = false;
    } else {
      // A queue that is still draining reaches the peer anyway; a heartbeat behind it adds nothing.
      if (connection_->queued_bytes() == 0 && connection_->send(codec_->heartbeat())) ++stats_.heartbeats_out;
      sent_since_heartbeat_ = true;
    }
    arm_heartbeat();
  });
}

void Session::arm_liveness(Clock::time_point deadline) {
  liveness_timer_->expires_at(deadline);
  liveness_timer_->async_wait([this, keep = connection_->shared_from_this()](const boost::system::error_code& ec) {
    // A closing connection is bounded by its linger time, not by heartbeats.
    if (ec || !connection_->open()) return;
    const auto limit = options_.heartbeat_interval * options_.heartbeat_misses;
    // While our input is paused we do not read, so we cannot hear the peer:
    // that silence is ours, not its (a congested peer meets the slow-consumer
    // deadline instead). The peer gets a whole limit once reading resumes.
    if (input_paused_) last_received_ = Clock::now();
    const auto next = last_received_ + limit;
    if (Clock::now() < next) return arm_liveness(next);
    // The peer is gone (or hung): nothing queued can reach it, so no flush.
    connection_->abort({CloseReason::Kind::heartbeat_timeout,
                        fmt::format("nothing received for {} ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                       Clock::now() - last_received_)
                                                                       .count())});
  });
}

void Session::arm_idle() {
  idle_timer_->expires_after(options_.idle_timeout / 4);
  idle_timer_->async_wait([this, keep = connection_->shared_from_this()](const boost::system::error_code& ec) {
    if (ec || !connection_->open()) return;
    const auto now = Clock::now();
    if (message_activity_) {
      message_activity_ = false;
      last_activity_ = now;
    } else if (now - last_activity_ >= options_.idle_timeout) {
      return connection_->close({CloseReason::Kind::idle_timeout,
                                 fmt::format("no message for {} ms", options_.idle_timeout.count())});
    }
    arm_idle();
  });
}

void Session::on_close(TcpConnection& /*connection*/, const CloseReason& reason) {
  for (auto* timer : {&heartbeat_timer_, &liveness_timer_, &idle_timer_, &slow_timer_})
    if (*timer) (*timer)->cancel();
  events_->on_close(*this, reason);
}

}  // namespace volley::net
