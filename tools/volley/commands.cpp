#include "commands.hpp"

#include <csignal>
#include <exception>
#include <string>

#include <spdlog/spdlog.h>

#include <volley/net/io_backend.hpp>

namespace volley::tools {

int run_command(const Runner& run) {
  // A reader of our output that has gone (a pipe into `head`) must not kill
  // the program: writes to it fail instead, and output.hpp drops them. The
  // sockets never raise SIGPIPE (MSG_NOSIGNAL).
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return run();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    if (const std::string problem = net::io_backend_problem(); !problem.empty()) spdlog::critical("{}", problem);
    return 1;
  }
}

}  // namespace volley::tools
