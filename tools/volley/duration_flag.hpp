#pragma once
// The one check every duration on every program's command line passes: a
// plain decimal number of the flag's unit, finite and within the flag's
// documented range. CLI11's Range alone lets "nan" through (every comparison
// with NaN is false), and a NaN or a huge value then turned into a deadline
// that was off, negative or already past; this refuses both, naming the flag's
// unit and limits, and the program exits non-zero.
#include <string>

#include <CLI/CLI.hpp>

namespace volley::tools {

// `unit`: "seconds" or "ms", as the flag's help says.
CLI::Validator duration_range(double min, double max, const std::string& unit = "seconds");

// The longest run any program accepts (--seconds, --duration, --time): 30 days.
inline constexpr double kMaxRunSeconds = 30.0 * 86400;

}  // namespace volley::tools
