#include <volley/netem/impairment.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <vector>

#include <fmt/core.h>

namespace volley::netem {

namespace {

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

bool parse_double(std::string_view s, double& out, std::string_view& rest) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc{} || !std::isfinite(out)) return false;
  rest = s.substr(static_cast<std::size_t>(end - s.data()));
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "1%", "1" (tc reads a bare number as a percentage too), "0.5%".
bool parse_percent(std::string_view s, double& out) {
  std::string_view rest;
  if (!parse_double(s, out, rest) || !(rest.empty() || rest == "%")) return false;
  out /= 100.0;
  return out >= 0 && out <= 1;
}

// Far above any link worth emulating, and far enough below the clock's range
// that sums of times and queue positions never overflow.
constexpr double kMaxTimeNs = 3600e9;     // one hour
constexpr double kMaxRateBits = 1e15;     // one petabit per second
constexpr std::int64_t kMaxOverhead = 65535;

// "50ms", "100us", "1.5s", "20000usec"; a bare number is microseconds, as in tc.
bool parse_time(std::string_view s, std::chrono::nanoseconds& out) {
  double v = 0;
  std::string_view rest;
  if (!parse_double(s, v, rest) || v < 0) return false;
  const std::string unit = lower(rest);
  double scale = 0;
  if (unit.empty() || unit == "us" || unit == "usec" || unit == "usecs") scale = 1e3;
  else if (unit == "ms" || unit == "msec" || unit == "msecs") scale = 1e6;
  else if (unit == "s" || unit == "sec" || unit == "secs") scale = 1e9;
  else if (unit == "ns" || unit == "nsec" || unit == "nsecs") scale = 1;
  else return false;
  if (v * scale > kMaxTimeNs) return false;
  out = std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(v * scale)));
  return true;
}

// tc's rate units: bit kbit mbit gbit (powers of 1000), kibit mibit gibit
// (1024), and bps kbps mbps gbps (bytes per second). A bare number is bits/s.
bool parse_rate(std::string_view s, std::uint64_t& bits_per_s) {
  double v = 0;
  std::string_view rest;
  if (!parse_double(s, v, rest) || v <= 0) return false;
  const std::string unit = lower(rest);
  struct Unit {
    const char* name;
    double bits;
  };
  static constexpr Unit kUnits[] = {{"", 1},           {"bit", 1},         {"kbit", 1e3},      {"mbit", 1e6},
                                    {"gbit", 1e9},     {"tbit", 1e12},     {"kibit", 1024.0},  {"mibit", 1048576.0},
                                    {"gibit", 1073741824.0}, {"bps", 8},   {"kbps", 8e3},      {"mbps", 8e6},
                                    {"gbps", 8e9},     {"kibps", 8192.0},  {"mibps", 8388608.0}};
  for (const auto& u : kUnits) {
    if (unit == u.name) {
      if (v * u.bits > kMaxRateBits) return false;
      bits_per_s = static_cast<std::uint64_t>(std::llround(v * u.bits));
      return bits_per_s > 0;
    }
  }
  return false;
}

template <class T>
bool parse_int(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

bool is_number(std::string_view s) {
  double v;
  std::string_view rest;
  return parse_double(s, v, rest);
}

class Words {
 public:
  explicit Words(std::vector<std::string_view> w) : w_(std::move(w)) {}
  bool done() const { return i_ >= w_.size(); }
  std::string_view take() { return w_[i_++]; }
  bool next_is_number() const { return i_ < w_.size() && is_number(w_[i_]); }
  bool next_is(std::string_view word) const { return i_ < w_.size() && w_[i_] == word; }

 private:
  std::vector<std::string_view> w_;
  std::size_t i_ = 0;
};

const char* to_string(DelayDistribution d) {
  switch (d) {
    case DelayDistribution::uniform: return "uniform";
    case DelayDistribution::normal: return "normal";
    case DelayDistribution::pareto: return "pareto";
    case DelayDistribution::paretonormal: return "paretonormal";
  }
  return "?";
}

}  // namespace

std::optional<Impairment> parse_impairment(std::string_view text, std::string& error) {
  Impairment imp;
  Words words(split_words(text));
  auto fail = [&](std::string message) -> std::optional<Impairment> {
    error = std::move(message);
    return std::nullopt;
  };
  // Reads an optional trailing percentage (a correlation) into `out`.
  auto optional_percent = [&](double& out, const char* what) {
    if (!words.next_is_number()) return true;
    const auto w = words.take();
    if (!parse_percent(w, out)) {
      error = fmt::format("{}: '{}' is not a percentage", what, w);
      return false;
    }
    return true;
  };
  auto required_percent = [&](double& out, const char* what) {
    if (words.done()) {
      error = fmt::format("{} needs a percentage", what);
      return false;
    }
    const auto w = words.take();
    if (!parse_percent(w, out)) {
      error = fmt::format("{}: '{}' is not a percentage", what, w);
      return false;
    }
    return true;
  };

  while (!words.done()) {
    const std::string_view word = words.take();
    if (word == "delay" || word == "latency") {
      if (words.done() || !parse_time(words.take(), imp.delay))
        return fail("delay needs a time such as 50ms, at most 1 hour");
      if (words.next_is_number()) {
        if (!parse_time(words.take(), imp.jitter)) return fail("delay: bad jitter (a time of at most 1 hour)");
        if (!optional_percent(imp.delay_correlation, "delay correlation")) return std::nullopt;
      }
    } else if (word == "distribution") {
      if (words.done()) return fail("distribution needs uniform, normal, pareto or paretonormal");
      const std::string name = lower(words.take());
      if (name == "uniform") imp.distribution = DelayDistribution::uniform;
      else if (name == "normal") imp.distribution = DelayDistribution::normal;
      else if (name == "pareto") imp.distribution = DelayDistribution::pareto;
      else if (name == "paretonormal") imp.distribution = DelayDistribution::paretonormal;
      else return fail(fmt::format("unknown distribution '{}' (uniform, normal, pareto, paretonormal)", name));
    } else if (word == "loss" || word == "drop") {
      if (words.next_is("random")) words.take();
      if (words.next_is("state")) {
        words.take();
        auto& l = imp.loss;
        l.kind = LossModel::Kind::state;
        if (!required_percent(l.p13, "loss state p13")) return std::nullopt;
        l.p31 = 1 - l.p13, l.p32 = 0, l.p23 = 1, l.p14 = 0;  // tc's defaults
        for (double* field : {&l.p31, &l.p32, &l.p23, &l.p14})
          if (!optional_percent(*field, "loss state")) return std::nullopt;
      } else if (words.next_is("gemodel")) {
        words.take();
        auto& l = imp.loss;
        l.kind = LossModel::Kind::gemodel;
        if (!required_percent(l.p, "loss gemodel p")) return std::nullopt;
        l.r = 1 - l.p, l.one_minus_h = 1, l.one_minus_k = 0;  // tc's defaults
        for (double* field : {&l.r, &l.one_minus_h, &l.one_minus_k})
          if (!optional_percent(*field, "loss gemodel")) return std::nullopt;
      } else {
        imp.loss.kind = LossModel::Kind::random;
        if (!required_percent(imp.loss.probability, "loss")) return std::nullopt;
        if (!optional_percent(imp.loss.correlation, "loss correlation")) return std::nullopt;
      }
    } else if (word == "duplicate") {
      if (!required_percent(imp.duplicate, "duplicate") ||
          !optional_percent(imp.duplicate_correlation, "duplicate correlation"))
        return std::nullopt;
    } else if (word == "corrupt") {
      if (!required_percent(imp.corrupt, "corrupt") || !optional_percent(imp.corrupt_correlation, "corrupt correlation"))
        return std::nullopt;
    } else if (word == "reorder") {
      if (!required_percent(imp.reorder, "reorder") || !optional_percent(imp.reorder_correlation, "reorder correlation"))
        return std::nullopt;
      if (imp.reorder_gap == 0) imp.reorder_gap = 1;  // tc's default
    } else if (word == "gap") {
      if (words.done() || !parse_int(words.take(), imp.reorder_gap) || imp.reorder_gap == 0)
        return fail("gap needs a packet count of at least 1");
    } else if (word == "rate") {
      if (words.done() || !parse_rate(words.take(), imp.rate_bits_per_s))
        return fail("rate needs a rate such as 10mbit or 1mbps, at most 1000tbit");
      const auto bounded = [](std::int64_t v) { return v >= -kMaxOverhead && v <= kMaxOverhead; };
      if (words.next_is_number() && (!parse_int(words.take(), imp.packet_overhead) || !bounded(imp.packet_overhead)))
        return fail("rate: bad packet overhead (-65535 to 65535 bytes)");
      if (words.next_is_number() && (!parse_int(words.take(), imp.cell_size) || !bounded(imp.cell_size)))
        return fail("rate: bad cell size (at most 65535 bytes)");
      if (words.next_is_number() && (!parse_int(words.take(), imp.cell_overhead) || !bounded(imp.cell_overhead)))
        return fail("rate: bad cell overhead (-65535 to 65535 bytes)");
    } else if (word == "limit") {
      if (words.done() || !parse_int(words.take(), imp.limit) || imp.limit == 0)
        return fail("limit needs a packet count of at least 1");
    } else if (word == "keep-order") {
      imp.keep_order = true;
    } else if (word == "down" || word == "blackhole") {
      imp.down = true;
    } else {
      return fail(fmt::format("unknown word '{}'", word));
    }
  }
  if (imp.reorder > 0 && imp.delay.count() == 0) return fail("reorder needs a delay, as in tc-netem");
  return imp;
}

std::string Impairment::describe() const {
  // fmt::format_to rather than string concatenation: GCC 12 warns falsely on the latter.
  std::string out;
  auto put = std::back_inserter(out);
  auto pct = [](double v) { return v * 100; };
  fmt::format_to(put, "limit {}", limit);
  if (delay.count() || jitter.count()) {
    fmt::format_to(put, " delay {:g}ms", static_cast<double>(delay.count()) / 1e6);
    if (jitter.count()) {
      fmt::format_to(put, " {:g}ms", static_cast<double>(jitter.count()) / 1e6);
      if (delay_correlation > 0) fmt::format_to(put, " {:g}%", pct(delay_correlation));
      fmt::format_to(put, " distribution {}", to_string(distribution));
    }
  }
  switch (loss.kind) {
    case LossModel::Kind::none: break;
    case LossModel::Kind::random:
      fmt::format_to(put, " loss random {:g}%", pct(loss.probability));
      if (loss.correlation > 0) fmt::format_to(put, " {:g}%", pct(loss.correlation));
      break;
    case LossModel::Kind::state:
      fmt::format_to(put, " loss state {:g}% {:g}% {:g}% {:g}% {:g}%", pct(loss.p13), pct(loss.p31), pct(loss.p32),
                     pct(loss.p23), pct(loss.p14));
      break;
    case LossModel::Kind::gemodel:
      fmt::format_to(put, " loss gemodel {:g}% {:g}% {:g}% {:g}%", pct(loss.p), pct(loss.r), pct(loss.one_minus_h),
                     pct(loss.one_minus_k));
      break;
  }
  if (duplicate > 0) fmt::format_to(put, " duplicate {:g}%", pct(duplicate));
  if (corrupt > 0) fmt::format_to(put, " corrupt {:g}%", pct(corrupt));
  if (reorder > 0) fmt::format_to(put, " reorder {:g}% gap {}", pct(reorder), reorder_gap);
  if (rate_bits_per_s) fmt::format_to(put, " rate {}bit {}", rate_bits_per_s, packet_overhead);
  if (keep_order) out += " keep-order";
  if (down) out += " down";
  return out;
}

}  // namespace volley::netem
