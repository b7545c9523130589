#include "duration_flag.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/core.h>

namespace volley::tools {

namespace {
constexpr std::pair<std::string_view, double> kUnits[] = {
    {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}};

// Seconds of `text` where a bare number counts `bare_unit_s` seconds.
std::optional<double> parse(std::string_view text, double bare_unit_s) {
  const std::string copy(text);
  errno = 0;
  char* end = nullptr;
  const double number = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end == copy.c_str() || errno == ERANGE || !std::isfinite(number)) return std::nullopt;
  const std::string_view suffix(end, copy.c_str() + copy.size() - end);
  double unit = bare_unit_s;
  if (!suffix.empty()) {
    unit = 0;
    for (const auto& [name, seconds] : kUnits)
      if (suffix == name) unit = seconds;
    if (unit == 0) return std::nullopt;
  }
  const double seconds = number * unit;
  if (!std::isfinite(seconds)) return std::nullopt;
  return seconds;
}

// Parses the option's text into seconds, checks the range and hands CLI11 the
// number to store: seconds, or whole milliseconds where `milliseconds`.
CLI::Validator duration_in_range(double min_s, double max_s, double bare_unit_s, bool milliseconds = false) {
  const std::string limits = fmt::format("{} to {}", format_duration(min_s), format_duration(max_s));
  return CLI::Validator(
      [min_s, max_s, bare_unit_s, milliseconds, limits](std::string& text) -> std::string {
        const std::optional<double> seconds = parse(text, bare_unit_s);
        if (!seconds) return fmt::format("'{}' is not a duration such as 250ms, 1.5s or 2min", text);
        // A little slack: 0.1s is 0.1000000000000000055 and must pass 0.1.
        if (*seconds < min_s * (1 - 1e-12) || *seconds > max_s * (1 + 1e-12))
          return fmt::format("{} is out of range: {}", text, limits);
        text = milliseconds ? fmt::format("{}", std::llround(*seconds * 1000)) : fmt::format("{}", *seconds);
        return {};
      },
      limits);
}
}  // namespace

std::optional<double> parse_duration(std::string_view text) { return parse(text, 1.0); }

std::string format_duration(double seconds) {
  if (seconds == 0) return "0";
  for (auto it = std::rbegin(kUnits); it != std::rend(kUnits); ++it) {
    const double count = seconds / it->second;
    if (count >= 1 && std::abs(count - std::round(count)) < 1e-9) return fmt::format("{}{}", std::round(count), it->first);
  }
  return fmt::format("{}s", seconds);
}

CLI::Option* add_duration_option(CLI::App& cmd, const std::string& names, double& seconds, const std::string& help,
                                 double min_s, double max_s, bool show_default) {
  CLI::Option* opt = cmd.add_option(names, seconds, help)->transform(duration_in_range(min_s, max_s, 1.0));
  opt->type_name("DURATION");
  if (show_default) opt->default_str(format_duration(seconds));
  return opt;
}

CLI::Option* add_old_duration_alias(CLI::App& cmd, const std::string& names, double& seconds, double unit_s,
                                    double min_s, double max_s) {
  return cmd.add_option(names, seconds)->transform(duration_in_range(min_s, max_s, unit_s))->group("");
}

CLI::Option* add_duration_option(CLI::App& cmd, const std::string& names, std::int64_t& milliseconds,
                                 const std::string& help, double min_s, double max_s) {
  CLI::Option* opt = cmd.add_option(names, milliseconds, help)->transform(duration_in_range(min_s, max_s, 1.0, true));
  opt->type_name("DURATION");
  opt->default_str(format_duration(static_cast<double>(milliseconds) / 1000));
  return opt;
}

CLI::Option* add_old_duration_alias(CLI::App& cmd, const std::string& names, std::int64_t& milliseconds,
                                    double min_s, double max_s) {
  return cmd.add_option(names, milliseconds)->transform(duration_in_range(min_s, max_s, 1e-3, true))->group("");
}

}  // namespace volley::tools
