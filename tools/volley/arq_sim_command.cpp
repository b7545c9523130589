// `volley arq-sim`: the ARQ scenarios on a virtual clock (arq_sim.hpp): every
// variant and seed in well under a second per run, the same table as
// `volley arq-bench`, deterministic for a seed.
#include <filesystem>
#include <fstream>

#include <boost/json/array.hpp>
#include <fmt/core.h>

#include "arq_commands.hpp"
#include "arq_report.hpp"
#include "output.hpp"
#include "duration_flag.hpp"
#include "commands.hpp"
#include "json_output.hpp"

namespace volley::tools {

namespace {

struct SimCommandOptions {
  std::vector<int> scenarios{1, 2, 3, 4, 5};
  std::vector<std::string> variants;  // empty: each scenario's defaults
  int seeds = 0;                      // 0: each scenario's count
  std::string out;
  bool json = false;
  ArqSimOptions sim;
};

int run_sim(const SimCommandOptions& o) {
  std::vector<ArqVariant> chosen;
  for (const auto& text : o.variants) {
    std::string error;
    const auto v = parse_arq_variant(text, error);
    if (!v || v->kind != ArqVariant::Kind::arq) {
      tools::print(stderr, "volley arq-sim: {}\n", v ? "the simulation runs ARQ variants only (no tcp)" : error);
      return 2;
    }
    chosen.push_back(*v);
  }
  if (!o.out.empty()) std::filesystem::create_directories(o.out);
  boost::json::array summary;
  if (!o.json) print_arq_table_header();
  int failures = 0;
  for (int number : o.scenarios) {
    const ArqScenario* scenario = find_arq_scenario(number);
    const auto variants = chosen.empty() ? default_arq_variants(*scenario) : chosen;
    const int seeds = o.seeds > 0 ? o.seeds : scenario->seeds;
    tools::print(stderr, "scenario {}: {}\n", scenario->number, scenario->summary);
    for (const auto& variant : variants) {
      for (int seed = 1; seed <= seeds; ++seed) {
        const ArqRunResult r = simulate_arq(*scenario, variant, o.sim, static_cast<std::uint64_t>(seed));
        failures += r.error.empty() ? 0 : 1;
        std::string csv;
        if (!o.out.empty()) {
          csv = fmt::format("sim_s{}_{}_seed{}.csv", scenario->number, variant.label(), seed);
          write_csv(o.out + "/" + csv, r.records);
        }
        if (!o.json) print_arq_row(*scenario, variant, static_cast<std::uint64_t>(seed), r);
        summary.push_back(arq_row_json(*scenario, variant, static_cast<std::uint64_t>(seed), r, csv));
      }
    }
  }
  if (!o.out.empty()) std::ofstream(o.out + "/summary.json") << to_json_text(summary) << '\n';
  if (o.json) tools::print("{}\n", to_json_text(summary));
  return failures == 0 ? 0 : 1;
}

}  // namespace

Runner add_arq_sim_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("arq-sim", "The ARQ scenarios on a virtual clock through the netem link model: every "
                                            "variant and seed in moments, deterministic for a seed");
  auto o = std::make_shared<SimCommandOptions>();
  cmd->add_option("--scenario", o->scenarios,
                  "Scenarios (1: 50 ms, 200 ms apart; 2: 50+-10 ms, 1% loss, 25 ms apart, every scheme; 3: as 2, "
                  "selective repeat with and without FEC; 4: as 3 with burst loss; 5: KCP-style round trips)")
      ->check(CLI::Range(1, 5));
  cmd->add_option("--variant", o->variants,
                  "Variants to run instead of each scenario's own: sr, gbn, saw, sr+fec=K:M, sr+fec=adaptive")
      ->type_name("VARIANT");
  cmd->add_option("--seeds", o->seeds, "Seeds per variant")
      ->default_str("the scenario's own, 1 to 5")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--window", o->sim.window, "Window in packets")->capture_default_str()->check(CLI::Range(1, 65535));
  cmd->add_option("--size", o->sim.size, "Message size for scenarios 1-4")
      ->type_name("BYTES")
      ->capture_default_str()
      ->check(CLI::Range(16, 65000));
  cmd->add_option("--fast-retransmit-after", o->sim.fast_retransmit_after,
                  "Selective repeat: resend a hole once this many later packets are acked (0: never)")
      ->capture_default_str();
  add_rto_flag(*cmd, o->sim.fixed_timeout_s);
  cmd->add_option("--out", o->out, "Folder for per-message CSV files and summary.json")->type_name("DIR");
  cmd->add_flag("--json", o->json, "Print the summary as JSON instead of the table");
  return [o] { return run_sim(*o); };
}

}  // namespace volley::tools
