#include <volley/netem/random.hpp>

#include <algorithm>
#include <cmath>

namespace volley::netem {

namespace {
std::uint64_t splitmix64(std::uint64_t& x) noexcept {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
}  // namespace

Random::Random(std::uint64_t seed) noexcept {
  for (auto& word : s_) word = splitmix64(seed);
}

std::uint64_t Random::next() noexcept {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double normal_quantile(double u) noexcept {
  // Acklam's rational approximation (relative error below 1.2e-9).
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  u = std::clamp(u, 1e-300, 1 - 1e-16);
  constexpr double low = 0.02425;
  if (u < low) {
    const double q = std::sqrt(-2 * std::log(u));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (u > 1 - low) {
    const double q = std::sqrt(-2 * std::log(1 - u));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double q = u - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double pareto_quantile(double u) noexcept {
  // Pareto with scale 1 and shape 3: mean 3/2, variance 3/4; standardised.
  constexpr double kShape = 3.0;
  constexpr double kMean = kShape / (kShape - 1);
  const double kSd = std::sqrt(kShape / ((kShape - 1) * (kShape - 1) * (kShape - 2)));
  u = std::clamp(u, 0.0, 1 - 1e-16);
  return (std::pow(1 - u, -1 / kShape) - kMean) / kSd;
}

}  // namespace volley::netem
