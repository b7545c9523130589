// The Prometheus text exposition writer: families, labels, escaping, histograms.
#include <array>
#include <limits>

#include <gtest/gtest.h>

#include <volley/metrics/prometheus.hpp>

namespace volley::metrics {
namespace {

TEST(PrometheusText, WritesAFamilyThenItsSamplesWholeNumbersWhole) {
  PrometheusText out;
  out.family("volley_messages_received_total", "counter", "Messages decoded from peers.");
  out.sample("volley_messages_received_total", 12345678901.0);
  out.family("volley_queue_seconds", "gauge", "A fraction.");
  out.sample("volley_queue_seconds", 0.25);
  EXPECT_EQ(out.text(),
            "# HELP volley_messages_received_total Messages decoded from peers.\n"
            "# TYPE volley_messages_received_total counter\n"
            "volley_messages_received_total 12345678901\n"
            "# HELP volley_queue_seconds A fraction.\n"
            "# TYPE volley_queue_seconds gauge\n"
            "volley_queue_seconds 0.25\n");
}

TEST(PrometheusText, EscapesLabelValuesAndHelpAsTheFormatSays) {
  PrometheusText out;
  out.family("x_total", "counter", "A help with a \\ and a\nnewline and a \"quote\".");
  out.sample("x_total", {{"path", "C:\\dir"}, {"say", "\"hi\"\n"}}, 1);
  EXPECT_EQ(out.text(),
            "# HELP x_total A help with a \\\\ and a\\nnewline and a \"quote\".\n"
            "# TYPE x_total counter\n"
            "x_total{path=\"C:\\\\dir\",say=\"\\\"hi\\\"\\n\"} 1\n");
}

TEST(PrometheusText, AHistogramHasCumulativeBucketsAnInfBucketASumAndACount) {
  PrometheusText out;
  out.family("rtt_seconds", "histogram", "Round trips.");
  const std::array<double, 3> bounds{0.0001, 0.001, 1};
  const std::array<std::uint64_t, 3> cumulative{2, 5, 9};
  out.histogram("rtt_seconds", bounds, cumulative, 1.5, 10);
  EXPECT_EQ(out.text(),
            "# HELP rtt_seconds Round trips.\n"
            "# TYPE rtt_seconds histogram\n"
            "rtt_seconds_bucket{le=\"0.0001\"} 2\n"
            "rtt_seconds_bucket{le=\"0.001\"} 5\n"
            "rtt_seconds_bucket{le=\"1\"} 9\n"
            "rtt_seconds_bucket{le=\"+Inf\"} 10\n"
            "rtt_seconds_sum 1.5\n"
            "rtt_seconds_count 10\n");
}

TEST(PrometheusText, NotANumberAndInfinitiesAreSpelledAsTheFormatSpellsThem) {
  PrometheusText out;
  out.sample("a", std::numeric_limits<double>::quiet_NaN());
  out.sample("b", std::numeric_limits<double>::infinity());
  out.sample("c", -std::numeric_limits<double>::infinity());
  EXPECT_EQ(out.text(), "a NaN\nb +Inf\nc -Inf\n");
}

}  // namespace
}  // namespace volley::metrics
