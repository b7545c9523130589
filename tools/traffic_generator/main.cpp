// `traffic_generator`: the classic command line (-m TYPE:SIZE:FRACTION ... -t SECONDS),
// the same code as `volley gen`.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "help_format.hpp"

int main(int argc, char** argv) {
  CLI::App app{"traffic_generator: send a mix of gNB messages to a target (same as `volley gen`)"};
  volley::tools::use_help_format(app);
  volley::tools::Runner run = volley::tools::add_gen_options(app);
  CLI11_PARSE(app, argc, argv);
  // Logs go to stderr: stdout carries the reports, JSON included.
  spdlog::set_default_logger(spdlog::stderr_color_mt("volley"));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  return volley::tools::run_command(run);
}
