// libFuzzer target: the tc-netem syntax parser takes any text without
// crashing, and whatever it accepts drives the link model through a few
// hundred packets without crashing or delivering more than it may (every
// packet once, plus the duplicates it counted).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <volley/netem/impairment.hpp>
#include <volley/netem/link_model.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto impairment = volley::netem::parse_impairment(text, error);
  if (!impairment) {
    if (error.empty()) std::abort();  // a refusal always says why
    return 0;
  }
  volley::netem::LinkModel link(*impairment, 1);
  volley::netem::Nanos now{0};
  volley::netem::Departure d;
  std::uint64_t out = 0;
  for (int i = 0; i < 300; ++i) {
    link.submit(now, std::vector<std::byte>(64, std::byte{0x5A}));
    now += std::chrono::milliseconds(1);
    while (link.take_due(now, d)) ++out;
  }
  for (int i = 0; i < 10'000; ++i) {
    const auto next = link.next_departure();
    if (!next) break;
    now = std::max(now, *next);
    while (link.take_due(now, d)) ++out;
  }
  const auto& c = link.counters();
  if (out > c.packets_in + c.duplicated || c.packets_out != out) std::abort();
  return 0;
}
