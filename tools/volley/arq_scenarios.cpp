#include "arq_scenarios.hpp"

#include <algorithm>

#include "arq_commands.hpp"
#include "arq_messages.hpp"

namespace volley::tools {

const std::vector<ArqScenario>& arq_scenarios() {
  static const std::vector<ArqScenario> kScenarios{
      {1, "delay 50ms", 200, 100, 0, false, 1, "50 ms, a message every 200 ms, 100 messages"},
      {2, "delay 50ms 10ms distribution normal loss random 1%", 25, 1000, 0, false, 1,
       "50+-10 ms normal, 1% loss, every 25 ms, 1000 messages, every scheme"},
      {3, "delay 50ms 10ms distribution normal loss random 1%", 25, 1000, 0, false, 5,
       "as 2, selective repeat with and without FEC, 5 seeds"},
      {4, "delay 50ms 10ms distribution normal loss state 1% 5%", 25, 1000, 0, false, 3,
       "as 3 with burst loss 'state 1% 5%', 3 seeds"},
      {5, "delay 46ms 16ms loss random 5%", 20, 1000, kArqStampSize, true, 5,
       "KCP-style: 30-62 ms uniform one way, 5% loss each way, 16 bytes every 20 ms echoed back, round trip"},
  };
  return kScenarios;
}

const ArqScenario* find_arq_scenario(int number) {
  for (const auto& s : arq_scenarios())
    if (s.number == number) return &s;
  return nullptr;
}

std::string ArqVariant::label() const {
  if (kind == Kind::tcp) return "tcp";
  if (kind == Kind::sctp) return "sctp";
  std::string l = scheme == arq::Scheme::selective_repeat ? "sr" : scheme == arq::Scheme::go_back_n ? "gbn" : "saw";
  if (fec) {
    std::string t = fec_text;
    std::replace(t.begin(), t.end(), ':', '-');
    l += "_fec" + t;
  }
  return l;
}

std::string ArqVariant::name() const {
  if (kind == Kind::tcp) return "tcp (over TUN)";
  if (kind == Kind::sctp) return "sctp (over UDP)";
  std::string n = arq::to_string(scheme);
  if (fec) n += " + FEC " + fec_text;
  return n;
}

std::optional<ArqVariant> parse_arq_variant(const std::string& text, std::string& error) {
  ArqVariant v;
  if (text == "tcp" || text == "sctp") {
    v.kind = text == "tcp" ? ArqVariant::Kind::tcp : ArqVariant::Kind::sctp;
    return v;
  }
  const auto plus = text.find('+');
  const auto scheme = parse_scheme(text.substr(0, plus));
  if (!scheme) {
    error = "a variant is sr, gbn or saw (optionally with +fec=K:M or +fec=adaptive), tcp or sctp: not '" + text + "'";
    return std::nullopt;
  }
  v.scheme = *scheme;
  if (plus != std::string::npos) {
    const std::string rest = text.substr(plus + 1);
    if (rest.rfind("fec=", 0) != 0) {
      error = "after '+' comes fec=K:M or fec=adaptive: not '" + rest + "'";
      return std::nullopt;
    }
    arq::FecConfig fec;
    v.fec_text = rest.substr(4);
    if (!arq::parse_fec(v.fec_text, fec, error)) return std::nullopt;
    v.fec = fec;
  }
  return v;
}

std::vector<ArqVariant> default_arq_variants(const ArqScenario& scenario) {
  std::vector<std::string> names;
  switch (scenario.number) {
    case 1: names = {"saw", "gbn", "sr"}; break;
    case 2: names = {"saw", "gbn", "sr"}; break;
    case 3: names = {"sr", "sr+fec=4:1", "sr+fec=adaptive"}; break;
    case 4: names = {"sr", "sr+fec=4:1", "sr+fec=adaptive"}; break;
    default: names = {"sr", "sr+fec=4:1", "sr+fec=2:1", "sr+fec=adaptive"}; break;
  }
  std::vector<ArqVariant> out;
  std::string ignored;
  for (const auto& n : names) out.push_back(*parse_arq_variant(n, ignored));
  return out;
}

}  // namespace volley::tools
