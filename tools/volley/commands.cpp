#include "commands.hpp"

#include <exception>
#include <string>

#include <spdlog/spdlog.h>

#include <volley/net/io_backend.hpp>

namespace volley::tools {

int run_command(const Runner& run) {
  try {
    return run();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    if (const std::string problem = net::io_backend_problem(); !problem.empty()) spdlog::critical("{}", problem);
    return 1;
  }
}

}  // namespace volley::tools
