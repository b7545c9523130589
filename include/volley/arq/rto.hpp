#pragma once
// Retransmission timeout from measured round trips, RFC 6298: SRTT and RTTVAR
// with gains 1/8 and 1/4, RTO = SRTT + max(granularity, 4 RTTVAR) within
// [min, max], doubled on every timeout (capped) until a new sample arrives.
// The caller applies Karn's rule: no samples from retransmitted packets.
#include <algorithm>
#include <chrono>

namespace volley::arq {

using Nanos = std::chrono::nanoseconds;

struct RtoConfig {
  Nanos initial{std::chrono::milliseconds(300)};
  Nanos min{std::chrono::milliseconds(20)};
  Nanos max{std::chrono::seconds(10)};
  Nanos granularity{std::chrono::milliseconds(1)};
  Nanos fixed{0};  // non-zero: always this (a fixed timeout, for comparison with RTO estimation)
};

class RtoEstimator {
 public:
  explicit RtoEstimator(const RtoConfig& config = {}) : config_(config), rto_(config.fixed.count() ? config.fixed : config.initial) {}

  void sample(Nanos rtt) noexcept {
    if (!has_sample_) {
      srtt_ = rtt;
      rttvar_ = rtt / 2;
      has_sample_ = true;
    } else {
      const Nanos delta = srtt_ > rtt ? srtt_ - rtt : rtt - srtt_;
      rttvar_ = (3 * rttvar_ + delta) / 4;
      srtt_ = (7 * srtt_ + rtt) / 8;
    }
    backoffs_ = 0;
    update();
  }

  void backoff() noexcept {
    ++backoffs_;
    update();
  }

  // Back to SRTT + 4 RTTVAR without a new sample. Called when an ack brings
  // progress: the path works again, even when every packet in flight was
  // retransmitted and Karn's rule leaves no sample to take (go-back-N on a lossy
  // link would otherwise wait out the capped RTO on every loss).
  void clear_backoff() noexcept {
    if (backoffs_ == 0) return;
    backoffs_ = 0;
    update();
  }

  Nanos rto() const noexcept { return rto_; }
  Nanos srtt() const noexcept { return srtt_; }
  Nanos rttvar() const noexcept { return rttvar_; }
  bool has_sample() const noexcept { return has_sample_; }

 private:
  void update() noexcept {
    if (config_.fixed.count()) {
      rto_ = config_.fixed;
      return;
    }
    Nanos base = has_sample_ ? srtt_ + std::max(config_.granularity, 4 * rttvar_) : config_.initial;
    base = std::clamp(base, config_.min, config_.max);
    for (int i = 0; i < backoffs_ && base < config_.max; ++i) base = std::min(base * 2, config_.max);
    rto_ = base;
  }

  RtoConfig config_;
  Nanos rto_;
  Nanos srtt_{0};
  Nanos rttvar_{0};
  bool has_sample_ = false;
  int backoffs_ = 0;
};

}  // namespace volley::arq
