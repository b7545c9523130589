#include <volley/session/policy.hpp>

#include <algorithm>

namespace volley::session {

const char* to_string(End end) noexcept {
  switch (end) {
    case End::none: return "none";
    case End::peer_silent: return "peer silent";
    case End::idle: return "idle";
  }
  return "?";
}

namespace {
Clock::duration to_clock(std::chrono::milliseconds d) noexcept {
  return std::chrono::duration_cast<Clock::duration>(std::max(d, std::chrono::milliseconds{0}));
}
}  // namespace

SessionPolicy::SessionPolicy(const PolicyOptions& options) noexcept : options_(options) {
  const auto interval = to_clock(options_.heartbeat_interval);
  heartbeat_check_ = interval / 2;
  // Zero misses would declare the peer dead at once: one interval is the least.
  liveness_limit_ = interval * std::max(options_.heartbeat_misses, 1u);
  idle_check_ = to_clock(options_.idle_timeout) / 4;
}

void SessionPolicy::start(TimePoint now) noexcept {
  last_received_ = last_activity_ = now;
  next_heartbeat_check_ = heartbeat_check_.count() > 0 ? now + heartbeat_check_ : TimePoint::max();
  next_idle_check_ = idle_check_.count() > 0 ? now + idle_check_ : TimePoint::max();
  sent_since_check_ = message_activity_ = input_paused_ = finished_ = false;
}

void SessionPolicy::input_resumed(TimePoint now) noexcept {
  if (!input_paused_) return;
  input_paused_ = false;
  last_received_ = now;
}

Decision SessionPolicy::poll(TimePoint now, bool output_idle) noexcept {
  Decision d;
  if (finished_) return d;
  if (hears_peer() && !input_paused_ && now >= last_received_ + liveness_limit_) {
    d.end = End::peer_silent;
    d.silent_for = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_received_);
  } else if (now >= next_idle_check_) {
    if (message_activity_) {
      // The check's own time stands for the message's: the session never
      // closes sooner than the timeout after the last message.
      message_activity_ = false;
      last_activity_ = now;
    } else if (now - last_activity_ >= to_clock(options_.idle_timeout)) {
      d.end = End::idle;
    }
    next_idle_check_ = now + idle_check_;
  }
  if (d.end != End::none) {
    finished_ = true;
    return d;
  }
  if (now >= next_heartbeat_check_) {
    if (sent_since_check_) {
      sent_since_check_ = false;
    } else {
      d.send_heartbeat = output_idle;
      sent_since_check_ = true;  // the heartbeat, or the queue draining in its place
    }
    next_heartbeat_check_ = now + heartbeat_check_;
  }
  return d;
}

TimePoint SessionPolicy::next_deadline() const noexcept {
  if (finished_) return TimePoint::max();
  TimePoint next = std::min(next_heartbeat_check_, next_idle_check_);
  if (hears_peer() && !input_paused_) next = std::min(next, last_received_ + liveness_limit_);
  return next;
}

}  // namespace volley::session
