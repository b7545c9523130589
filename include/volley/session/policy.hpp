#pragma once
// The decisions a session makes over time, as a state machine with no clock
// and no socket: when a heartbeat is due, when the peer has gone silent, when
// the session has been idle too long. (Bounds on bytes, such as a peer that
// does not read its output, are the connection's: net::ConnectionLimits.) The caller tells it what happened and when,
// asks it what to do at a given time, and sleeps until next_deadline(); tests
// drive it on a virtual clock. net::Session binds it to one timer.
//
// What it promises (with the interval I, the misses M and the idle timeout T):
// - heartbeats: checked every I/2; a check that finds nothing sent since the
//   previous one asks for a heartbeat (if no output is queued: a queue that is
//   still draining reaches the peer anyway). So the peer never waits longer
//   than I between two things from us, and an idle session sends one heartbeat
//   per I.
// - peer silent: no byte received for I x M ends the session (exactly at the
//   last receive time + I x M). While the caller has paused its own input it
//   cannot hear the peer, so the check waits, and the peer gets a whole I x M
//   from the moment input resumes.
// - idle: checked every T/4; no message either way (heartbeats do not count)
//   for T ends the session, between T and T + T/4 after the last message.
// A zero interval or idle timeout turns that check off.
// After it has answered with an end, the policy is finished: it asks for
// nothing more.
#include <chrono>
#include <cstdint>

namespace volley::session {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

struct PolicyOptions {
  std::chrono::milliseconds heartbeat_interval{5000};
  unsigned heartbeat_misses = 3;
  std::chrono::milliseconds idle_timeout{0};
};

// Why the policy ends a session. peer_silent means nothing queued can reach
// the peer any more (abort); idle is a graceful close.
enum class End : std::uint8_t { none, peer_silent, idle };
const char* to_string(End end) noexcept;

struct Decision {
  bool send_heartbeat = false;
  End end = End::none;
  // With End::peer_silent: how long nothing was received.
  std::chrono::milliseconds silent_for{0};
};

class SessionPolicy {
 public:
  explicit SessionPolicy(const PolicyOptions& options) noexcept;

  // The session opened at `now`: every clock starts here.
  void start(TimePoint now) noexcept;

  // Bytes (anything) arrived from the peer at `now`. Only the liveness check
  // needs the time; when it is off (see hears_peer()) callers may skip this.
  void bytes_received(TimePoint now) noexcept { last_received_ = now; }
  bool hears_peer() const noexcept { return liveness_limit_.count() > 0; }

  // A message went out / came in. Cheap and timeless: the periodic checks
  // look at these marks, so a busy session pays no clock read per message.
  void message_sent() noexcept {
    sent_since_check_ = true;
    message_activity_ = true;
  }
  void message_received() noexcept { message_activity_ = true; }

  // The caller stopped / resumed reading its input.
  void input_paused() noexcept { input_paused_ = true; }
  void input_resumed(TimePoint now) noexcept;
  bool reading() const noexcept { return !input_paused_; }

  // What to do at `now` (call at or after next_deadline(); an early call is
  // harmless). `output_idle`: nothing is queued for the peer.
  Decision poll(TimePoint now, bool output_idle) noexcept;

  // When poll() next has something to decide; TimePoint::max() for never.
  TimePoint next_deadline() const noexcept;

  bool finished() const noexcept { return finished_; }
  const PolicyOptions& options() const noexcept { return options_; }

 private:
  PolicyOptions options_;
  Clock::duration heartbeat_check_{};
  Clock::duration idle_check_{};
  Clock::duration liveness_limit_{};

  TimePoint next_heartbeat_check_ = TimePoint::max();
  TimePoint next_idle_check_ = TimePoint::max();
  TimePoint last_received_{};
  TimePoint last_activity_{};
  bool sent_since_check_ = false;
  bool message_activity_ = false;
  bool input_paused_ = false;
  bool finished_ = false;
};

}  // namespace volley::session
