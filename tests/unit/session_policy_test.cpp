// The session policy on a virtual clock: every timeout at the exact time its
// rules say, heartbeats never leaving the peer waiting longer than an interval.
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <volley/session/policy.hpp>

namespace volley::session {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

// The virtual clock starts at an arbitrary point, as steady_clock's does.
const TimePoint t0 = TimePoint{} + 1000h;

milliseconds since_t0(TimePoint t) { return std::chrono::duration_cast<milliseconds>(t - t0); }

struct Step {
  TimePoint at;
  Decision decision;
};

// Wakes the policy at each of its deadlines up to `until` (as the timer of a
// session would) and records what it said at each; stops at an end.
std::vector<Step> run_until(SessionPolicy& p, TimePoint until, bool output_idle = true) {
  std::vector<Step> steps;
  for (int guard = 0; guard < 100000; ++guard) {
    const TimePoint next = p.next_deadline();
    if (next > until) break;
    const Decision d = p.poll(next, output_idle);
    steps.push_back({next, d});
    if (d.end != End::none) break;
  }
  return steps;
}

std::vector<milliseconds> heartbeat_times(const std::vector<Step>& steps) {
  std::vector<milliseconds> out;
  for (const Step& s : steps)
    if (s.decision.send_heartbeat) out.push_back(since_t0(s.at));
  return out;
}

std::optional<Step> end_of(const std::vector<Step>& steps) {
  if (!steps.empty() && steps.back().decision.end != End::none) return steps.back();
  return std::nullopt;
}

PolicyOptions heartbeats(milliseconds interval, unsigned misses) {
  PolicyOptions o;
  o.heartbeat_interval = interval;
  o.heartbeat_misses = misses;
  return o;
}

TEST(SessionPolicy, AnIdleSessionSendsAHeartbeatEveryInterval) {
  SessionPolicy p(heartbeats(100ms, 1000));
  p.start(t0);
  const auto steps = run_until(p, t0 + 1000ms);
  // The first check finds nothing sent since the session opened; after that a
  // heartbeat is itself what was sent, so one goes out every other check.
  EXPECT_EQ(heartbeat_times(steps), (std::vector<milliseconds>{50ms, 150ms, 250ms, 350ms, 450ms, 550ms, 650ms, 750ms,
                                                                850ms, 950ms}));
}

TEST(SessionPolicy, MessagesSentMakeHeartbeatsUnnecessary) {
  SessionPolicy p(heartbeats(100ms, 1000));
  p.start(t0);
  for (TimePoint t = t0 + 10ms; t < t0 + 1000ms; t += 30ms) {
    run_until(p, t);  // no check may ask for a heartbeat while messages flow
    p.message_sent();
  }
  auto steps = run_until(p, t0 + 1000ms);
  EXPECT_TRUE(heartbeat_times(steps).empty());
  // The last message went at 970 ms: the check at 1000 ms sees it, the one at
  // 1050 ms asks for the heartbeat.
  steps = run_until(p, t0 + 1100ms);
  EXPECT_EQ(heartbeat_times(steps), (std::vector<milliseconds>{1050ms}));
}

// Whatever the pattern of sends, the peer never waits longer than an interval
// between two things from us.
TEST(SessionPolicy, ThePeerNeverWaitsLongerThanAnInterval) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    SessionPolicy p(heartbeats(100ms, 1000));
    p.start(t0);
    TimePoint last_out = t0;
    milliseconds longest{0};
    TimePoint t = t0;
    const TimePoint end = t0 + 20s;
    while (t < end) {
      // Sends come in bursts with gaps of 0 to 300 ms.
      t += milliseconds(std::uniform_int_distribution<int>(0, 300)(rng));
      for (const Step& s : run_until(p, t)) {
        if (!s.decision.send_heartbeat) continue;
        longest = std::max(longest, since_t0(s.at) - since_t0(last_out));
        last_out = s.at;
      }
      p.message_sent();
      longest = std::max(longest, since_t0(t) - since_t0(last_out));
      last_out = t;
    }
    EXPECT_LE(longest, 100ms) << "round " << round;
  }
}

TEST(SessionPolicy, NoHeartbeatIsQueuedBehindOutputThatIsStillDraining) {
  SessionPolicy p(heartbeats(100ms, 1000));
  p.start(t0);
  // Output is queued throughout: the checks ask for nothing.
  EXPECT_TRUE(heartbeat_times(run_until(p, t0 + 500ms, /*output_idle=*/false)).empty());
  // Drained: heartbeats resume on the usual rhythm.
  EXPECT_EQ(heartbeat_times(run_until(p, t0 + 700ms, true)), (std::vector<milliseconds>{550ms, 650ms}));
}

TEST(SessionPolicy, APeerSilentForIntervalTimesMissesEndsTheSessionAtThatMoment) {
  SessionPolicy p(heartbeats(100ms, 3));
  p.start(t0);
  p.bytes_received(t0 + 120ms);
  p.bytes_received(t0 + 170ms);
  const auto end = end_of(run_until(p, t0 + 10s));
  ASSERT_TRUE(end);
  EXPECT_EQ(end->decision.end, End::peer_silent);
  EXPECT_EQ(since_t0(end->at), 470ms);  // 170 + 3 x 100
  EXPECT_EQ(end->decision.silent_for, 300ms);
  EXPECT_TRUE(p.finished());
  EXPECT_EQ(p.next_deadline(), TimePoint::max());
  EXPECT_EQ(p.poll(t0 + 20s, true).end, End::none);  // said once
}

TEST(SessionPolicy, APeerThatKeepsTalkingIsNeverCalledSilent) {
  SessionPolicy p(heartbeats(100ms, 2));
  p.start(t0);
  for (TimePoint t = t0 + 150ms; t < t0 + 10s; t += 150ms) {
    EXPECT_FALSE(end_of(run_until(p, t))) << since_t0(t).count();
    p.bytes_received(t);
  }
}

TEST(SessionPolicy, WhileInputIsPausedThePeerIsNotBlamedAndGetsAWholeLimitAfter) {
  SessionPolicy p(heartbeats(100ms, 2));
  p.start(t0);
  p.input_paused();
  EXPECT_FALSE(end_of(run_until(p, t0 + 5s)));
  p.input_resumed(t0 + 5s);
  const auto end = end_of(run_until(p, t0 + 10s));
  ASSERT_TRUE(end);
  EXPECT_EQ(end->decision.end, End::peer_silent);
  EXPECT_EQ(since_t0(end->at), 5200ms);
}

TEST(SessionPolicy, ZeroMissesCountsAsOne) {
  SessionPolicy p(heartbeats(100ms, 0));
  p.start(t0);
  const auto end = end_of(run_until(p, t0 + 10s));
  ASSERT_TRUE(end);
  EXPECT_EQ(since_t0(end->at), 100ms);
}

PolicyOptions idle(milliseconds timeout) {
  PolicyOptions o;
  o.heartbeat_interval = 0ms;
  o.idle_timeout = timeout;
  return o;
}

TEST(SessionPolicy, ASessionWithNoMessageClosesAtTheIdleTimeout) {
  SessionPolicy p(idle(400ms));
  p.start(t0);
  const auto end = end_of(run_until(p, t0 + 10s));
  ASSERT_TRUE(end);
  EXPECT_EQ(end->decision.end, End::idle);
  EXPECT_EQ(since_t0(end->at), 400ms);
}

// Messages either way keep it open; it closes between T and T + T/4 after the last one.
TEST(SessionPolicy, TheIdleTimeoutCountsFromTheLastMessageEitherWay) {
  for (const milliseconds last : {150ms, 199ms, 200ms, 201ms, 1234ms}) {
    for (const bool sent : {true, false}) {
      SessionPolicy p(idle(400ms));
      p.start(t0);
      for (TimePoint t = t0 + 1ms; t <= t0 + last; t += 1ms) {
        ASSERT_FALSE(end_of(run_until(p, t)));
        if (t == t0 + last || (t - t0) % 100ms == 0ms) {
          if (sent) p.message_sent();
          else p.message_received();
        }
      }
      const auto end = end_of(run_until(p, t0 + 10s));
      ASSERT_TRUE(end);
      EXPECT_EQ(end->decision.end, End::idle);
      EXPECT_GE(since_t0(end->at), last + 400ms) << last.count() << (sent ? " sent" : " received");
      EXPECT_LE(since_t0(end->at), last + 500ms) << last.count() << (sent ? " sent" : " received");
    }
  }
}

TEST(SessionPolicy, HeartbeatsDoNotKeepASessionFromBeingIdle) {
  PolicyOptions o = heartbeats(100ms, 2);
  o.idle_timeout = 1000ms;
  SessionPolicy p(o);
  p.start(t0);
  std::vector<Step> steps;
  // The peer's heartbeats arrive every 100 ms and ours go out as asked.
  for (TimePoint t = t0 + 100ms; t < t0 + 5s && !p.finished(); t += 100ms) {
    for (const Step& s : run_until(p, t)) steps.push_back(s);
    p.bytes_received(t);
  }
  const auto end = end_of(steps);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->decision.end, End::idle);
  EXPECT_EQ(since_t0(end->at), 1000ms);
  EXPECT_EQ(heartbeat_times(steps).size(), 10u);  // 50, 150, ... 950
}

TEST(SessionPolicy, WithEveryCheckOffItNeverWakes) {
  PolicyOptions o;
  o.heartbeat_interval = 0ms;
  SessionPolicy p(o);
  p.start(t0);
  p.input_paused();
  p.input_resumed(t0 + 1s);
  EXPECT_FALSE(p.hears_peer());
  EXPECT_EQ(p.next_deadline(), TimePoint::max());
  const Decision d = p.poll(t0 + 1000h, true);
  EXPECT_FALSE(d.send_heartbeat);
  EXPECT_EQ(d.end, End::none);
}

TEST(SessionPolicy, TheNextDeadlineIsTheEarliestOfTheChecks) {
  PolicyOptions o = heartbeats(1000ms, 3);  // checks every 500 ms, silence at 3 s
  o.idle_timeout = 800ms;                   // checks every 200 ms
  SessionPolicy p(o);
  p.start(t0);
  EXPECT_EQ(p.next_deadline(), t0 + 200ms);
  o.idle_timeout = 0ms;  // now the heartbeat check comes first
  SessionPolicy q(o);
  q.start(t0);
  EXPECT_EQ(q.next_deadline(), t0 + 500ms);
}

TEST(SessionPolicy, RestartingClearsTheLastSession) {
  PolicyOptions o = heartbeats(100ms, 2);
  SessionPolicy p(o);
  p.start(t0);
  ASSERT_TRUE(end_of(run_until(p, t0 + 10s)));
  p.input_paused();  // left paused by the last session
  p.start(t0 + 20s);
  EXPECT_FALSE(p.finished());
  EXPECT_TRUE(p.reading());
  const auto end = end_of(run_until(p, t0 + 30s));
  ASSERT_TRUE(end);
  EXPECT_EQ(end->decision.end, End::peer_silent);  // the new session hears its peer from its start
  EXPECT_EQ(since_t0(end->at), 20200ms);
}

}  // namespace
}  // namespace volley::session
