#pragma once
// Every duration on every program's command line is written the same way: a
// number with a unit, "250ms", "1.5s", "2min", "100us" (ns, us, ms, s, min, h,
// d), or a bare number of seconds. Each is checked once, here: finite and
// within the flag's documented range. (CLI11's Range alone lets "nan" through,
// since every comparison with NaN is false, and a NaN or a huge value then
// became a deadline that was off, negative or already past.) A value outside
// is refused, naming the limits, and the program exits non-zero.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace volley::tools {

// Seconds in `text` ("250ms", "1.5s", "3"), or nothing when it is not a
// finite duration.
std::optional<double> parse_duration(std::string_view text);

// How a duration of `seconds` is shown (a default in help): "5s", "250ms", "0".
std::string format_duration(double seconds);

// Adds a duration option that stores seconds in `seconds`, accepts
// [min_s, max_s] and shows its current value as the default (unless
// `show_default` is false: the help then says what no value means).
CLI::Option* add_duration_option(CLI::App& cmd, const std::string& names, double& seconds,
                                 const std::string& help, double min_s, double max_s, bool show_default = true);

// The same for a spelling kept from before durations took units: a hidden
// option whose bare numbers are `unit_s` seconds each (0.001: milliseconds),
// storing seconds in `seconds`.
CLI::Option* add_old_duration_alias(CLI::App& cmd, const std::string& names, double& seconds, double unit_s,
                                    double min_s, double max_s);

// The same for a duration kept in whole milliseconds; the old spelling's bare
// numbers are milliseconds.
CLI::Option* add_duration_option(CLI::App& cmd, const std::string& names, std::int64_t& milliseconds,
                                 const std::string& help, double min_s, double max_s);
CLI::Option* add_old_duration_alias(CLI::App& cmd, const std::string& names, std::int64_t& milliseconds,
                                    double min_s, double max_s);

// The longest run any program accepts (--duration): 30 days.
inline constexpr double kMaxRunSeconds = 30.0 * 86400;

}  // namespace volley::tools
