#pragma once
// Exponential backoff with jitter for reconnection. Pure: the caller passes
// the random draw, so tests know every delay.
#include <algorithm>
#include <chrono>

namespace volley::net {

struct BackoffOptions {
  std::chrono::milliseconds initial{100};
  std::chrono::milliseconds maximum{10000};
  double multiplier = 2.0;
  // Each delay is scaled by a factor drawn from [1 - jitter, 1 + jitter], so
  // clients cut off together do not all come back in the same instant.
  double jitter = 0.2;
};

class Backoff {
 public:
  explicit Backoff(const BackoffOptions& options) : options_(options) {}

  // The delay before the next attempt; `uniform01` is a draw from [0, 1).
  std::chrono::milliseconds next(double uniform01) {
    const double base = std::min(current_, static_cast<double>(options_.maximum.count()));
    current_ = std::min(current_ * options_.multiplier, static_cast<double>(options_.maximum.count()));
    const double scaled = base * (1.0 + options_.jitter * (2.0 * uniform01 - 1.0));
    const double clamped = std::clamp(scaled, 0.0, static_cast<double>(options_.maximum.count()));
    ++attempts_;
    return std::chrono::milliseconds(static_cast<long long>(clamped));
  }
  void reset() {
    current_ = static_cast<double>(options_.initial.count());
    attempts_ = 0;
  }
  unsigned attempts() const noexcept { return attempts_; }

 private:
  BackoffOptions options_;
  double current_ = static_cast<double>(options_.initial.count());
  unsigned attempts_ = 0;
};

}  // namespace volley::net
