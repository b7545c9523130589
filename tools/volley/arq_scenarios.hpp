#pragma once
// The ARQ delay scenarios: the classic benchmark's four, and the KCP-style
// round-trip test. Shared by the real-time benchmark (`volley arq-bench`) and the
// virtual-clock simulation (`volley arq-sim`), and the variants they compare.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <volley/arq/fec.hpp>
#include <volley/arq/sender.hpp>

namespace volley::tools {

struct ArqScenario {
  int number;
  std::string netem;  // both directions alike
  double interval_ms;
  std::uint64_t count;
  std::size_t size;  // 0: the --size option
  bool echo;         // the peer echoes each message back over its own sender; the figure is the round trip
  int seeds;         // runs per variant, seeds 1..n
  std::string summary;
};

// 1-4: a 1000-byte message (by default) every interval, delay = in-order delivery - input.
// 5: a 16-byte message every 20 ms over 30-62 ms one way (uniform) with 5% loss
//    each way, echoed back over the same reliable protocol; round trip per message.
const std::vector<ArqScenario>& arq_scenarios();
const ArqScenario* find_arq_scenario(int number);

// What a run compares: an ARQ scheme (with or without FEC) or a baseline.
struct ArqVariant {
  enum class Kind { arq, tcp, sctp };
  Kind kind = Kind::arq;
  arq::Scheme scheme = arq::Scheme::selective_repeat;
  std::optional<arq::FecConfig> fec;
  std::string fec_text;  // as given: "4:1", "adaptive"

  std::string label() const;  // file names: sr, sr_fec4-1, sr_fecadaptive, tcp, sctp
  std::string name() const;   // tables: "selective-repeat + FEC 4:1"
};

// "sr", "gbn", "saw", "tcp", "sctp", or "sr+fec=K:M" / "sr+fec=adaptive"; error says what is wrong.
std::optional<ArqVariant> parse_arq_variant(const std::string& text, std::string& error);
// The ARQ variants a scenario runs by default; the real-time benchmark adds
// SCTP (scenarios 1-4) and TCP (where it can).
std::vector<ArqVariant> default_arq_variants(const ArqScenario& scenario);

}  // namespace volley::tools
