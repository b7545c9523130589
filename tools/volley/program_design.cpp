#include "program_design.hpp"

#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace volley::tools {

namespace {
constexpr std::size_t kDefaultPoolThreads = 2;

std::size_t pool_threads(const ProgramDesign& flags) {
  if (flags.design == net::Design::loop_per_thread) return 1;  // the metrics endpoint's loop
  return flags.threads == 0 ? kDefaultPoolThreads : flags.threads;
}
}  // namespace

void add_program_design_flags(CLI::App& cmd, ProgramDesign& flags, const char* object) {
  cmd.add_option_function<std::string>(
         "--design",
         [&flags](const std::string& name) {
           flags.design = name == "thread-pool" ? net::Design::thread_pool : net::Design::loop_per_thread;
         },
         fmt::format("loop-per-thread: {0} on one event loop, run by the main thread; thread-pool: the same on "
                     "one strand of a loop run by --threads threads, so one thread can run it while another waits in "
                     "the kernel",
                     object))
      ->check(CLI::IsMember({"loop-per-thread", "thread-pool"}))
      ->option_text("loop-per-thread|thread-pool")
      ->default_str("loop-per-thread");
  cmd.add_option("-t,--threads", flags.threads,
                 "Threads of the thread-pool design; the loop-per-thread design has one")
      ->default_str(std::to_string(kDefaultPoolThreads))
      ->check(CLI::Range(1, 256));
}

std::string check_program_design(const ProgramDesign& flags) {
  if (flags.design == net::Design::loop_per_thread && flags.threads > 1)
    return fmt::format("--threads {} needs --design thread-pool: in the loop-per-thread design one loop runs it all",
                       flags.threads);
  return {};
}

net::ServerOptions program_server_options(const ProgramDesign& flags) {
  return {.threads = pool_threads(flags), .design = flags.design};
}

std::size_t object_threads(const ProgramDesign& flags) {
  return flags.design == net::Design::thread_pool ? pool_threads(flags) : 1;
}

}  // namespace volley::tools
