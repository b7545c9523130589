#pragma once
// Randomness for the impairment model: a seeded xoshiro256** generator and the
// distributions netem needs, written here so that the same seed gives the same
// numbers on every platform (std:: distributions differ between libraries).
#include <array>
#include <cstdint>

namespace volley::netem {

class Random {
 public:
  explicit Random(std::uint64_t seed) noexcept;
  std::uint64_t next() noexcept;
  // Uniform in [0, 1).
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n) noexcept { return n ? next() % n : 0; }

 private:
  std::array<std::uint64_t, 4> s_{};
};

// netem's correlated random: each value leans on the previous one,
// next = (1 - rho) * fresh + rho * last. The mean stays 1/2, the spread shrinks
// as rho grows; that is what tc-netem does, and users' settings assume it.
class CorrelatedUniform {
 public:
  explicit CorrelatedUniform(double rho = 0) noexcept : rho_(rho) {}
  double next(Random& rng) noexcept {
    const double fresh = rng.uniform();
    if (rho_ == 0) return fresh;
    last_ = (1 - rho_) * fresh + rho_ * last_;
    return last_;
  }

 private:
  double rho_;
  double last_ = 0.5;
};

// Quantile functions of the standard distributions, zero mean and unit
// standard deviation, so that a delay's jitter is its standard deviation.
double normal_quantile(double u) noexcept;
double pareto_quantile(double u) noexcept;  // shape 3, as netem's pareto table; unbounded

}  // namespace volley::netem
