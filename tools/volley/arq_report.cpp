#include "arq_report.hpp"
#include "output.hpp"

#include <algorithm>

#include <fmt/core.h>

namespace volley::tools {

namespace {
double per_payload(std::uint64_t bytes, std::uint64_t payload) {
  return static_cast<double>(bytes) / static_cast<double>(std::max<std::uint64_t>(payload, 1));
}
}  // namespace

void print_arq_table_header() {
  tools::print("| scenario | variant | seed | delivered | mean ms | median ms | stdev ms | min ms | p99 ms | max ms | "
             "retransmissions | lost and rebuilt by FEC | data bytes per payload byte | all bytes per payload byte |\n");
  tools::print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
}

void print_arq_row(const ArqScenario& scenario, const ArqVariant& variant, std::uint64_t seed, const ArqRunResult& r) {
  const DelayStats s = delay_stats(r.records);
  // TCP keeps its retransmissions and bytes to itself: not shown rather than shown as zero.
  const bool known = variant.kind != ArqVariant::Kind::tcp;
  const auto or_na = [known](std::string text) { return known ? text : std::string("n/a"); };
  tools::print("| {} | {} | {} | {}/{} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} | {} | {} | {} |{}\n",
             scenario.number, variant.name(), seed, s.count, scenario.count, s.mean, s.median, s.stdev, s.min, s.p99,
             s.max, or_na(std::to_string(r.sender.retransmissions)),
             or_na(variant.fec ? std::to_string(r.fec_decoder.recovered - r.fec_decoder.originals_after_rebuild) : "-"),
             or_na(fmt::format("{:.3f}", per_payload(r.data_bytes, r.payload_bytes))),
             or_na(fmt::format("{:.3f}", per_payload(r.wire_bytes, r.payload_bytes))),
             r.error.empty() ? "" : " error: " + r.error);
}

boost::json::object arq_row_json(const ArqScenario& scenario, const ArqVariant& variant, std::uint64_t seed,
                                 const ArqRunResult& r, const std::string& csv) {
  boost::json::object o{{"name", csv.substr(0, csv.rfind('.'))},
                        {"scenario", scenario.number},
                        {"netem", scenario.netem},
                        {"interval_ms", scenario.interval_ms},
                        {"count", scenario.count},
                        {"echo", scenario.echo},
                        {"variant", variant.label()},
                        {"scheme", variant.name()},
                        {"seed", seed},
                        {"delay", to_json(delay_stats(r.records))},
                        {"error", r.error},
                        {"seconds", r.seconds},
                        {"csv", csv}};
  if (variant.kind != ArqVariant::Kind::tcp) {
    o["packets_sent"] = r.sender.packets_sent;
    o["retransmissions"] = r.sender.retransmissions;
    o["timeouts"] = r.sender.timeouts;
    o["fast_retransmits"] = r.sender.fast_retransmits;
    o["payload_bytes"] = r.payload_bytes;
    o["data_bytes"] = r.data_bytes;
    o["wire_bytes"] = r.wire_bytes;
    o["data_bytes_per_payload_byte"] = per_payload(r.data_bytes, r.payload_bytes);
    o["all_bytes_per_payload_byte"] = per_payload(r.wire_bytes, r.payload_bytes);
    o["lost_up"] = r.up.lost;
    o["lost_down"] = r.down.lost;
    if (variant.fec)
      o["fec"] = boost::json::object{{"groups", r.fec.groups},
                                     {"repair_packets", r.fec.repair_packets},
                                     {"repair_bytes", r.fec.repair_bytes},
                                     {"last_k", r.fec.k},
                                     {"last_m", r.fec.m},
                                     {"loss_estimate", r.fec.loss_estimate},
                                     {"reports", r.fec.reports},
                                     {"rebuilt", r.fec_decoder.recovered},
                                     {"originals_after_rebuild", r.fec_decoder.originals_after_rebuild},
                                     {"repairs_received", r.fec_decoder.repairs_received},
                                     {"groups_unrepairable", r.fec_decoder.groups_unrepairable}};
  }
  return o;
}

}  // namespace volley::tools
