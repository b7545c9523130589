#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <volley/metrics/histogram.hpp>

using volley::metrics::Histogram;

TEST(Histogram, SmallValuesAreExact) {
  Histogram h;
  for (std::uint64_t v = 0; v < 100; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 99u);
  EXPECT_EQ(h.percentile(50), 49u);
  EXPECT_EQ(h.percentile(100), 99u);
  EXPECT_DOUBLE_EQ(h.mean(), 49.5);
}

TEST(Histogram, BucketsCoverEveryValueContiguously) {
  for (std::size_t i = 0; i + 1 < Histogram::kBucketCount; ++i)
    ASSERT_EQ(Histogram::bucket_of(Histogram::bucket_upper(i) + 1), i + 1) << i;
  EXPECT_EQ(Histogram::bucket_of(~std::uint64_t{0}), Histogram::kBucketCount - 1);
  EXPECT_EQ(Histogram::bucket_upper(Histogram::kBucketCount - 1), ~std::uint64_t{0});
}

TEST(Histogram, PercentilesWithinTheRelativeErrorBound) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(10.0, 1.5);
  std::vector<std::uint64_t> values(200000);
  Histogram h;
  for (auto& v : values) {
    v = static_cast<std::uint64_t>(dist(rng));
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {1.0, 50.0, 90.0, 99.0, 99.9}) {
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
    const double exact = static_cast<double>(values[rank - 1]);
    const double reported = static_cast<double>(h.percentile(p));
    EXPECT_GE(reported, exact) << p;  // an upper bucket edge never under-reports
    EXPECT_LE(reported, exact * (1.0 + 1.0 / 64) + 1) << p;
  }
  EXPECT_EQ(h.percentile(100), values.back());
  EXPECT_EQ(h.min(), values.front());
}

TEST(Histogram, MergeEqualsRecordingEverythingInOne) {
  Histogram a, b, all;
  for (std::uint64_t v = 1; v < 100000; v += 7) {
    (v % 2 ? a : b).record(v * 13);
    all.record(v * 13);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  for (double p : {10.0, 50.0, 99.0}) EXPECT_EQ(a.percentile(p), all.percentile(p));
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  a.reset();
  EXPECT_EQ(a.count(), 0u);
  EXPECT_EQ(a.percentile(50), 0u);
}
