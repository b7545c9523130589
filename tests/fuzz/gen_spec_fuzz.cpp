// libFuzzer target: the traffic generator's `-m TYPE:SIZE:COUNT` specs parse
// any text without crashing; a refusal says why, and what parses validates.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gen_plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto spec = volley::tools::parse_spec(text, error);
  if (!spec) {
    if (error.empty()) std::abort();
    return 0;
  }
  (void)volley::tools::validate_specs({*spec}, false);
  (void)volley::tools::validate_specs({*spec}, true);
  return 0;
}
