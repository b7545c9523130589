#pragma once
// A log-linear histogram of non-negative integer values (latencies in ns):
// values below 2^kSubBucketBits are exact; above, each power of two is split into
// 2^(kSubBucketBits-1) equal buckets, so the relative error of a reported
// percentile is below 2^-(kSubBucketBits-1) (under 1.6% with 7 bits).
// Recording is a few instructions and never allocates; one owner thread records,
// and histograms are merged for the report.
#include <array>
#include <cstdint>

namespace volley::metrics {

class Histogram {
 public:
  static constexpr unsigned kSubBucketBits = 7;
  static constexpr std::uint64_t kSubBuckets = std::uint64_t{1} << kSubBucketBits;  // 128
  static constexpr std::uint64_t kHalf = kSubBuckets / 2;
  static constexpr std::size_t kBucketCount = kSubBuckets + (64 - kSubBucketBits) * kHalf;

  void record(std::uint64_t value, std::uint64_t count = 1) noexcept;
  void merge(const Histogram& other) noexcept;
  void reset() noexcept;

  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
  std::uint64_t max() const noexcept { return max_; }
  double mean() const noexcept { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }
  // The smallest recorded-bucket value v such that at least p% of values are <= v
  // (the bucket's upper edge, clamped to the exact min and max). p in [0, 100].
  std::uint64_t percentile(double p) const noexcept;

  static std::size_t bucket_of(std::uint64_t value) noexcept;
  static std::uint64_t bucket_upper(std::size_t index) noexcept;  // largest value in the bucket

 private:
  std::array<std::uint64_t, kBucketCount> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
};

}  // namespace volley::metrics
