// `volley`: one executable, one subcommand per tool.
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <volley/net/io_backend.hpp>

#include "commands.hpp"
#include "help_format.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Volley: low-latency asynchronous messaging toolkit"};
  volley::tools::use_help_format(app);
  app.require_subcommand(1);
  app.footer(std::string("I/O backend of this build: ") + volley::net::io_backend() +
             " (Asio's; chosen when Volley is compiled, CMake option VOLLEY_IO_URING)");
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "How much to log on stderr")
      ->option_text("trace|debug|info|warn|error|off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();

  volley::tools::Runner run_target = volley::tools::add_target_command(app);
  auto* gen = app.add_subcommand("gen", "Traffic generator: send a mix of gNB messages to a target (as traffic_generator)");
  volley::tools::Runner run_gen = volley::tools::add_gen_options(*gen);
  volley::tools::Runner run_netem = volley::tools::add_netem_command(app);
  volley::tools::Runner run_arq = volley::tools::add_arq_commands(app);
  volley::tools::Runner run_arq_bench = volley::tools::add_arq_bench_command(app);
  volley::tools::Runner run_arq_sim = volley::tools::add_arq_sim_command(app);
  volley::tools::Runner run_rpc = volley::tools::add_rpc_commands(app);
  volley::tools::Runner run_pingpong_server = volley::tools::add_pingpong_server_command(app);
  volley::tools::Runner run_pingpong = volley::tools::add_pingpong_command(app);
  volley::tools::Runner run_echo_server = volley::tools::add_echo_server_command(app);
  volley::tools::Runner run_echo_client = volley::tools::add_echo_client_command(app);
  volley::tools::Runner run_session_load = volley::tools::add_session_load_command(app);

  CLI11_PARSE(app, argc, argv);
  // Logs go to stderr: stdout carries the reports, JSON included.
  spdlog::set_default_logger(spdlog::stderr_color_mt("volley"));
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  const std::pair<const char*, const volley::tools::Runner*> commands[] = {
      {"target", &run_target},
      {"gen", &run_gen},
      {"netem", &run_netem},
      {"arq-send", &run_arq},
      {"arq-recv", &run_arq},
      {"arq-bench", &run_arq_bench},
      {"arq-sim", &run_arq_sim},
      {"rpc-server", &run_rpc},
      {"rpc-bench", &run_rpc},
      {"pingpong-server", &run_pingpong_server},
      {"pingpong", &run_pingpong},
      {"echo-server", &run_echo_server},
      {"echo-client", &run_echo_client},
      {"session-load", &run_session_load}};
  for (const auto& [name, run] : commands)
    if (app.got_subcommand(name)) return volley::tools::run_command(*run);
  return 2;
}
