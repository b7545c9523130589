#pragma once
// Small helpers shared by the tools' reports.
#include <chrono>
#include <string>

#include <boost/json/value.hpp>

namespace volley::tools {

// Pretty enough for people, one object per run for machines.
std::string to_json_text(const boost::json::value& value);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace volley::tools
