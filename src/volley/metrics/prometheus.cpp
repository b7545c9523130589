#include <volley/metrics/prometheus.hpp>

#include <cmath>

#include <fmt/format.h>

namespace volley::metrics {

namespace {
// HELP text escapes backslash and newline; label values also the double quote.
void append_escaped(std::string& out, std::string_view s, bool quote) {
  for (const char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote) out += "\\\"";
    else out += c;
  }
}
}  // namespace

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  append_escaped(text_, help, false);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void PrometheusText::value(double v) {
  // Integers (counters) are written whole: 1e+06 would be read the same by
  // Prometheus but not by a person comparing with a report.
  if (std::isnan(v)) text_ += "NaN";
  else if (std::isinf(v)) text_ += v > 0 ? "+Inf" : "-Inf";
  else if (v == std::floor(v) && std::fabs(v) < 1e18) text_ += fmt::format("{}", static_cast<long long>(v));
  else text_ += fmt::format("{}", v);
}

void PrometheusText::sample(std::string_view name, std::span<const Label> labels, double v) {
  text_ += name;
  if (!labels.empty()) {
    text_ += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) text_ += ',';
      text_ += labels[i].name;
      text_ += "=\"";
      append_escaped(text_, labels[i].value, true);
      text_ += '"';
    }
    text_ += '}';
  }
  text_ += ' ';
  value(v);
  text_ += '\n';
}

void PrometheusText::histogram(std::string_view name, std::span<const double> bounds,
                               std::span<const std::uint64_t> cumulative, double sum, std::uint64_t count) {
  const std::string bucket = std::string(name) + "_bucket";
  for (std::size_t i = 0; i < bounds.size() && i < cumulative.size(); ++i) {
    std::string le;
    const double b = bounds[i];
    le = b == std::floor(b) && std::fabs(b) < 1e18 ? fmt::format("{}", static_cast<long long>(b)) : fmt::format("{}", b);
    sample(bucket, {{"le", le}}, static_cast<double>(cumulative[i]));
  }
  sample(bucket, {{"le", "+Inf"}}, static_cast<double>(count));
  sample(std::string(name) + "_sum", sum);
  sample(std::string(name) + "_count", static_cast<double>(count));
}

}  // namespace volley::metrics
