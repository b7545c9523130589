#pragma once
// The subcommands of `volley`. Each registers its options on a CLI11 subcommand
// and returns the function that runs it once the command line is parsed.
#include <functional>

#include <CLI/CLI.hpp>

namespace volley::tools {

using Runner = std::function<int()>;

Runner add_target_command(CLI::App& app);
Runner add_netem_command(CLI::App& app);
// arq-send and arq-recv; the runner runs whichever was given.
Runner add_arq_commands(CLI::App& app);
Runner add_arq_bench_command(CLI::App& app);
Runner add_arq_sim_command(CLI::App& app);
// rpc-server and rpc-bench.
Runner add_rpc_commands(CLI::App& app);
Runner add_pingpong_server_command(CLI::App& app);
Runner add_pingpong_command(CLI::App& app);
Runner add_echo_server_command(CLI::App& app);
Runner add_echo_client_command(CLI::App& app);
Runner add_session_load_command(CLI::App& app);
// `volley gen` and the `traffic_generator` executable share this.
Runner add_gen_options(CLI::App& app);

// Runs `run`. An exception out of it is logged as critical and ends in status
// 1; where this build's I/O backend cannot run here (io_uring forbidden), the
// log says so and which build to use, since Asio's own error names only the
// system call.
int run_command(const Runner& run);

}  // namespace volley::tools
