#include <volley/metrics/histogram.hpp>

#include <algorithm>
#include <bit>
#include <cmath>

namespace volley::metrics {

std::size_t Histogram::bucket_of(std::uint64_t value) noexcept {
  if (value < kSubBuckets) return static_cast<std::size_t>(value);
  // Values in [2^e, 2^(e+1)) with e >= kSubBucketBits keep their top kSubBucketBits bits.
  const unsigned e = 63u - static_cast<unsigned>(std::countl_zero(value));
  const unsigned shift = e - (kSubBucketBits - 1);
  const std::uint64_t sub = (value >> shift) - kHalf;  // in [0, kHalf)
  return static_cast<std::size_t>(kSubBuckets + (e - kSubBucketBits) * kHalf + sub);
}

std::uint64_t Histogram::bucket_upper(std::size_t index) noexcept {
  if (index < kSubBuckets) return index;
  const std::size_t rel = index - kSubBuckets;
  const unsigned e = static_cast<unsigned>(rel / kHalf) + kSubBucketBits;
  const std::uint64_t sub = rel % kHalf + kHalf;
  const unsigned shift = e - (kSubBucketBits - 1);
  const std::uint64_t lower = sub << shift;
  return lower + ((std::uint64_t{1} << shift) - 1);
}

void Histogram::record(std::uint64_t value, std::uint64_t count) noexcept {
  if (count == 0) return;
  buckets_[bucket_of(value)] += count;
  count_ += count;
  sum_ += value * count;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void Histogram::merge(const Histogram& other) noexcept {
  if (other.count_ == 0) return;
  for (std::size_t i = 0; i < kBucketCount; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void Histogram::reset() noexcept { *this = Histogram{}; }

std::uint64_t Histogram::percentile(double p) const noexcept {
  if (count_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::clamp(bucket_upper(i), min_, max_);
  }
  return max_;
}

}  // namespace volley::metrics
