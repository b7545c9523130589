// `volley`: one executable, one subcommand per tool.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Volley: low-latency asynchronous messaging toolkit"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")->capture_default_str();

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
  try {
    if (app.got_subcommand("target")) return run_target();
    if (app.got_subcommand("gen")) return run_gen();
    if (app.got_subcommand("netem")) return run_netem();
    if (app.got_subcommand("arq-send") || app.got_subcommand("arq-recv")) return run_arq();
    if (app.got_subcommand("arq-bench")) return run_arq_bench();
    if (app.got_subcommand("arq-sim")) return run_arq_sim();
    if (app.got_subcommand("rpc-server") || app.got_subcommand("rpc-bench")) return run_rpc();
    if (app.got_subcommand("pingpong-server")) return run_pingpong_server();
    if (app.got_subcommand("pingpong")) return run_pingpong();
    if (app.got_subcommand("echo-server")) return run_echo_server();
    if (app.got_subcommand("echo-client")) return run_echo_client();
    if (app.got_subcommand("session-load")) return run_session_load();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  return 2;
}
