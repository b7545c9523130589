#pragma once
// One direction of an impaired link, configured with tc-netem's own words:
//   delay TIME [JITTER [CORRELATION]] [distribution uniform|normal|pareto|paretonormal]
//   loss [random] PERCENT [CORRELATION]
//   loss state P13 [P31 [P32 [P23 [P14]]]]
//   loss gemodel P [R [1-H [1-K]]]
//   duplicate PERCENT [CORRELATION]    corrupt PERCENT [CORRELATION]
//   reorder PERCENT [CORRELATION] [gap DISTANCE]
//   rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]    limit PACKETS
// and two words of Volley's: `keep-order` (jitter never reorders) and `down`
// (the link is cut: every packet is dropped).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace volley::netem {

enum class DelayDistribution { uniform, normal, pareto, paretonormal };

struct LossModel {
  enum class Kind { none, random, state, gemodel };
  Kind kind = Kind::none;
  double probability = 0;  // random
  double correlation = 0;  // random
  // 4-state Markov (state): transition probabilities.
  double p13 = 0, p31 = 1, p32 = 0, p23 = 1, p14 = 0;
  // Gilbert-Elliott (gemodel): good->bad p, bad->good r, loss in bad 1-h, loss in good 1-k.
  double p = 0, r = 1, one_minus_h = 1, one_minus_k = 0;
};

struct Impairment {
  std::chrono::nanoseconds delay{0};
  std::chrono::nanoseconds jitter{0};
  double delay_correlation = 0;
  DelayDistribution distribution = DelayDistribution::uniform;
  bool keep_order = false;
  LossModel loss;
  double duplicate = 0, duplicate_correlation = 0;
  double corrupt = 0, corrupt_correlation = 0;
  double reorder = 0, reorder_correlation = 0;
  std::uint32_t reorder_gap = 0;
  std::uint64_t rate_bits_per_s = 0;  // 0: unlimited
  std::int32_t packet_overhead = 0;
  std::uint32_t cell_size = 0;
  std::int32_t cell_overhead = 0;
  std::uint32_t limit = 1000;  // packets held at once, as tc-netem's default
  bool down = false;

  // The canonical tc-style text of this configuration.
  std::string describe() const;
};

// Parses tc-netem's arguments. On error returns nullopt and says why in `error`.
std::optional<Impairment> parse_impairment(std::string_view text, std::string& error);

}  // namespace volley::netem
