#pragma once
// One client of `volley pingpong`: runs a list of steps over one session. A
// step sends `messages` payloads of `size` bytes keeping at most `in_flight`
// unanswered (1 = one at a time, = messages = a burst), times each round trip
// from the moment the message went to the session to the moment its echo came
// back, and checks every echo byte for byte.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <volley/metrics/histogram.hpp>
#include <volley/net/session.hpp>

namespace volley::tools {

struct PingStep {
  std::size_t size = 1;
  std::size_t messages = 1;
  std::size_t in_flight = 1;
  bool warmup = false;
};

struct PingStepResult {
  PingStep step;
  metrics::Histogram rtt_ns;
  std::chrono::steady_clock::time_point started{};
  std::chrono::steady_clock::time_point finished{};
  double seconds() const { return std::chrono::duration<double>(finished - started).count(); }
};

class PingPongClient final : public net::SessionEvents {
 public:
  using Clock = std::chrono::steady_clock;

  // `done` runs once, on the client's loop, when every step finished or the session ended early;
  // `step_done` (optional) after each timed step, for progress lines.
  PingPongClient(std::vector<PingStep> steps, std::function<void()> done,
                 std::function<void(const PingStepResult&)> step_done = {});

  const std::vector<PingStepResult>& results() const noexcept { return results_; }
  std::uint64_t mismatches() const noexcept { return mismatches_; }
  bool completed() const noexcept { return step_ == steps_.size(); }
  const std::string& error() const noexcept { return error_; }

  void on_open(net::Session& s) override;
  void on_message(net::Session& s, const net::Message& echo) override;
  void on_backpressure(net::Session& s, bool congested) override;
  void on_close(net::Session& s, const net::CloseReason& reason) override;

 private:
  void begin_step(net::Session& s);
  void pump(net::Session& s);

  std::vector<PingStep> steps_;
  std::function<void()> done_;
  std::function<void(const PingStepResult&)> step_done_;
  std::vector<PingStepResult> results_;
  std::size_t step_ = 0;
  std::vector<std::byte> payload_;
  std::vector<Clock::time_point> sent_at_;
  std::size_t sent_ = 0;
  std::size_t received_ = 0;
  std::uint64_t mismatches_ = 0;
  std::string error_;
  bool finished_ = false;
};

}  // namespace volley::tools
