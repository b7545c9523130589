#pragma once
// Writes metrics in the Prometheus text exposition format (version 0.0.4):
// a family's HELP and TYPE lines, then its samples, each
// `name{label="value",...} number`. Label values and help text are escaped
// as the format requires. Pure: the caller gathers the numbers.
//
//   PrometheusText out;
//   out.family("volley_messages_received_total", "counter", "Messages decoded from peers.");
//   out.sample("volley_messages_received_total", 1234);
//   out.family("volley_sessions_closed_total", "counter", "Sessions ended, by reason.");
//   out.sample("volley_sessions_closed_total", {{"reason", "peer_closed"}}, 7);
//   serve(out.text());
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace volley::metrics {

struct Label {
  std::string_view name;
  std::string_view value;
};

class PrometheusText {
 public:
  // The content type a scrape answer carries.
  static constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

  // `type`: counter, gauge, histogram, summary or untyped.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, double value) { sample(name, std::span<const Label>{}, value); }
  void sample(std::string_view name, std::initializer_list<Label> labels, double value) {
    sample(name, std::span<const Label>(labels.begin(), labels.size()), value);
  }
  void sample(std::string_view name, std::span<const Label> labels, double value);

  // A histogram's samples: `bounds` are the buckets' upper bounds (ascending,
  // without +Inf), `cumulative[i]` the observations <= bounds[i]; `count`
  // goes in the +Inf bucket.
  void histogram(std::string_view name, std::span<const double> bounds, std::span<const std::uint64_t> cumulative,
                 double sum, std::uint64_t count);

  const std::string& text() const noexcept { return text_; }

 private:
  void value(double v);
  std::string text_;
};

}  // namespace volley::metrics
