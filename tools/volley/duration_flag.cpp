#include "duration_flag.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/core.h>

namespace volley::tools {

CLI::Validator duration_range(double min, double max, const std::string& unit) {
  const std::string limits = fmt::format("{} to {} {}", min, max, unit);
  return CLI::Validator(
      [min, max, unit, limits](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value))
          return fmt::format("'{}' is not a finite number of {}", text, unit);
        if (value < min || value > max) return fmt::format("{} is out of range: {}", text, limits);
        return {};
      },
      limits);
}

}  // namespace volley::tools
