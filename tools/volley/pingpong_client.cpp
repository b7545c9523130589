#include "pingpong_client.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace volley::tools {

PingPongClient::PingPongClient(std::vector<PingStep> steps, std::function<void()> done,
                               std::function<void(const PingStepResult&)> step_done)
    : steps_(std::move(steps)), done_(std::move(done)), step_done_(std::move(step_done)) {
  results_.reserve(steps_.size());
}

void PingPongClient::on_open(net::Session& s) {
  if (steps_.empty()) return s.close();
  begin_step(s);
}

void PingPongClient::begin_step(net::Session& s) {
  const PingStep& step = steps_[step_];
  payload_.resize(step.size);
  // Not zeros: an echo that came back from the wrong offset must not compare equal.
  for (std::size_t i = 0; i < payload_.size(); ++i)
    payload_[i] = std::byte{static_cast<unsigned char>((i * 131 + step_ * 7 + 1) & 0xff)};
  sent_at_.assign(step.messages, Clock::time_point{});
  sent_ = received_ = 0;
  results_.push_back({step, {}, Clock::now(), {}});
  pump(s);
}

void PingPongClient::pump(net::Session& s) {
  const PingStep& step = steps_[step_];
  while (sent_ < step.messages && sent_ - received_ < step.in_flight && !s.congested()) {
    sent_at_[sent_] = Clock::now();
    const net::SendResult r = s.send(payload_);
    if (r == net::SendResult::invalid) {
      error_ = fmt::format("a {}-byte payload cannot be framed", payload_.size());
      return s.close();
    }
    if (r != net::SendResult::sent) return;  // closed: on_close reports it
    ++sent_;
  }
}

void PingPongClient::on_message(net::Session& s, const net::Message& echo) {
  const std::span<const std::byte> payload = echo.bytes;
  if (step_ >= steps_.size() || received_ >= sent_) {
    ++mismatches_;  // an echo nobody asked for
    return;
  }
  const auto now = Clock::now();
  if (payload.size() != payload_.size() || std::memcmp(payload.data(), payload_.data(), payload.size()) != 0)
    ++mismatches_;
  PingStepResult& r = results_.back();
  r.rtt_ns.record(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent_at_[received_]).count()));
  ++received_;
  if (received_ < r.step.messages) return pump(s);
  r.finished = now;
  if (step_done_ && !r.step.warmup) step_done_(r);
  if (++step_ < steps_.size()) return begin_step(s);
  s.close();
}

void PingPongClient::on_backpressure(net::Session& s, bool congested) {
  if (!congested && step_ < steps_.size()) pump(s);
}

void PingPongClient::on_close(net::Session& /*s*/, const net::CloseReason& reason) {
  if (finished_) return;
  finished_ = true;
  if (!completed() && error_.empty()) {
    error_ = fmt::format("session ended after {} of {} steps: {}{}{}", step_, steps_.size(), net::to_string(reason.kind),
                         reason.detail.empty() ? "" : ": ", reason.detail);
  }
  if (done_) done_();
}

}  // namespace volley::tools
