// Which server a reconnecting client tries next, step by step: time and
// random draws are passed in, so every delay is known (jitter 0 here).
#include <chrono>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include <volley/net/server_picker.hpp>

namespace volley::net {
namespace {

using namespace std::chrono_literals;
using Clock = ServerPicker::Clock;

constexpr BackoffOptions kBackoff{.initial = 100ms, .maximum = 1000ms, .multiplier = 2.0, .jitter = 0.0};

TEST(ServerPicker, FirstFailsOverInOrderAndBacksOffOnlyAfterAWholeRound) {
  ServerPicker p(3, ServerPolicy::first, kBackoff, 2);
  const Clock::time_point t0{};
  EXPECT_EQ(p.first(), 0u) << "first ignores the starting point";
  auto next = p.after_failed_attempt(0, t0, 0.5);
  EXPECT_EQ(next.server, 1u);
  EXPECT_EQ(next.delay, 0ms) << "the next server at once";
  next = p.after_failed_attempt(1, t0, 0.5);
  EXPECT_EQ(next.server, 2u);
  EXPECT_EQ(next.delay, 0ms);
  next = p.after_failed_attempt(2, t0, 0.5);
  EXPECT_EQ(next.server, 0u) << "a whole round failed: the first again";
  EXPECT_EQ(next.delay, 100ms) << "after the backoff";
  p.after_failed_attempt(0, t0, 0.5);
  p.after_failed_attempt(1, t0, 0.5);
  EXPECT_EQ(p.after_failed_attempt(2, t0, 0.5).delay, 200ms) << "the backoff grows round by round";

  p.opened(1);  // say the second took
  next = p.after_lost_connection(1, t0, 0.5);
  EXPECT_EQ(next.server, 0u) << "back to the preferred server";
  EXPECT_EQ(next.delay, 100ms) << "the backoff started afresh at the open";
}

TEST(ServerPicker, RoundRobinStartsWhereItIsToldAndGoesRound) {
  std::vector<std::size_t> starts;
  for (std::uint64_t start = 0; start < 6; ++start)
    starts.push_back(ServerPicker(4, ServerPolicy::round_robin, kBackoff, start).first());
  EXPECT_EQ(starts, (std::vector<std::size_t>{0, 1, 2, 3, 0, 1})) << "clients told 0, 1, 2, ... spread evenly";

  ServerPicker p(3, ServerPolicy::round_robin, kBackoff, 1);
  const Clock::time_point t0{};
  ASSERT_EQ(p.first(), 1u);
  p.opened(1);
  auto next = p.after_lost_connection(1, t0, 0.5);
  EXPECT_EQ(next.server, 2u) << "the next server, not the one just lost";
  EXPECT_EQ(next.delay, 100ms);
  p.opened(2);
  next = p.after_lost_connection(2, t0, 0.5);
  EXPECT_EQ(next.server, 0u);
}

TEST(ServerPicker, RoundRobinSkipsAFailedServerUntilItsOwnBackoffPasses) {
  ServerPicker p(3, ServerPolicy::round_robin, kBackoff, 0);
  const Clock::time_point t0{};
  auto next = p.after_failed_attempt(0, t0, 0.5);  // server 0 is out until t0 + 100 ms
  EXPECT_EQ(next.server, 1u);
  EXPECT_EQ(next.delay, 0ms);
  p.opened(1);
  next = p.after_lost_connection(1, t0 + 10ms, 0.5);
  EXPECT_EQ(next.server, 2u);
  next = p.after_failed_attempt(2, t0 + 20ms, 0.5);  // 2 out until t0 + 120 ms
  EXPECT_EQ(next.server, 1u) << "0 is still in its backoff: skipped";
  EXPECT_EQ(next.delay, 0ms);
  next = p.after_failed_attempt(1, t0 + 30ms, 0.5);  // 1 out until t0 + 130 ms
  EXPECT_EQ(next.server, 0u) << "all in their backoff: the one out of it soonest";
  EXPECT_EQ(next.delay, 70ms);
  next = p.after_failed_attempt(0, t0 + 100ms, 0.5);  // 0 again: its backoff doubles, out until t0 + 300 ms
  EXPECT_EQ(next.server, 2u);
  EXPECT_EQ(next.delay, 20ms);
  next = p.after_failed_attempt(2, t0 + 500ms, 0.5);  // the others are out of their backoff by now
  EXPECT_EQ(next.server, 0u);
  EXPECT_EQ(next.delay, 0ms);
  p.opened(0);
  next = p.after_lost_connection(0, t0 + 600ms, 0.5);
  EXPECT_EQ(next.server, 1u);
  p.opened(1);
  next = p.after_failed_attempt(1, t0 + 700ms, 0.5);
  EXPECT_EQ(next.server, 2u);
}

TEST(ServerPicker, OneServerBacksOffAsASingleAddressAlwaysDid) {
  for (const ServerPolicy policy : {ServerPolicy::first, ServerPolicy::round_robin}) {
    ServerPicker p(1, policy, kBackoff, 7);
    Clock::time_point now{};
    std::vector<long long> delays;
    for (int i = 0; i < 5; ++i) {
      const auto next = p.after_failed_attempt(0, now, 0.5);
      EXPECT_EQ(next.server, 0u);
      delays.push_back(next.delay.count());
      now += next.delay;
    }
    EXPECT_EQ(delays, (std::vector<long long>{100, 200, 400, 800, 1000})) << to_string(policy);
    p.opened(0);
    EXPECT_EQ(p.after_lost_connection(0, now, 0.5).delay, 100ms) << to_string(policy);
  }
}

TEST(ServerPicker, AGoodbyeMeansAnAttemptAtOnceNotABackoff) {
  const Clock::time_point t0{};
  ServerPicker first(3, ServerPolicy::first, kBackoff, 0);
  first.opened(1);
  auto next = first.after_goodbye(1, t0);
  EXPECT_EQ(next.server, 0u) << "first: from the top again";
  EXPECT_EQ(next.delay, 0ms);
  ServerPicker spread(3, ServerPolicy::round_robin, kBackoff, 0);
  spread.after_failed_attempt(2, t0, 0.5);  // 2 is in its backoff
  spread.opened(1);
  next = spread.after_goodbye(1, t0 + 1ms);
  EXPECT_EQ(next.server, 0u) << "round-robin: the next server out of its backoff";
  EXPECT_EQ(next.delay, 0ms);
  ServerPicker one(1, ServerPolicy::round_robin, kBackoff, 0);
  one.opened(0);
  EXPECT_EQ(one.after_goodbye(0, t0).delay, 0ms) << "one address: a new process is on its port";
}

TEST(ServerPicker, PolicyNamesParseBothWays) {
  ServerPolicy policy = ServerPolicy::first;
  ASSERT_TRUE(parse_server_policy("round-robin", policy));
  EXPECT_EQ(policy, ServerPolicy::round_robin);
  EXPECT_STREQ(to_string(policy), "round-robin");
  ASSERT_TRUE(parse_server_policy("first", policy));
  EXPECT_EQ(policy, ServerPolicy::first);
  EXPECT_FALSE(parse_server_policy("random", policy));
  EXPECT_FALSE(parse_server_policy("round_robin", policy));
}

}  // namespace
}  // namespace volley::net
