#pragma once
// The ARQ benchmarks' table rows and JSON summary, the same for the real-time
// benchmark and the virtual-clock simulation.
#include <string>

#include <boost/json/object.hpp>

#include "arq_scenarios.hpp"
#include "arq_sim.hpp"

namespace volley::tools {

void print_arq_table_header();
void print_arq_row(const ArqScenario& scenario, const ArqVariant& variant, std::uint64_t seed, const ArqRunResult& r);
boost::json::object arq_row_json(const ArqScenario& scenario, const ArqVariant& variant, std::uint64_t seed,
                                 const ArqRunResult& r, const std::string& csv);

}  // namespace volley::tools
