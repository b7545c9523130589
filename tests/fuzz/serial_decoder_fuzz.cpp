// libFuzzer target: the reflection decoder must never crash or over-allocate
// on any input, and what it accepts must re-encode to exactly the same bytes
// (the encoding is canonical: one byte string per value).
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <volley/serial/binary.hpp>

namespace {

enum class Kind : std::uint8_t { a, b, c };

struct Leaf {
  bool flag;
  Kind kind;
  double x;
  std::optional<std::string> label;
};

struct Message {
  std::uint32_t id;
  std::string name;
  std::vector<Leaf> leaves;
  std::array<std::int16_t, 3> triple;
  std::optional<std::vector<std::uint8_t>> blob;
  std::vector<std::vector<std::string>> table;
};

}  // namespace

template <>
struct volley::serial::EnumRange<Kind> {
  static constexpr int min = 0, max = 2;
};

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  Message m{};
  std::error_code ec;
  if (!volley::serial::decode(in, m, ec)) return 0;
  std::vector<std::byte> again;
  volley::serial::encode_append(m, again);
  if (again.size() != size || !std::equal(again.begin(), again.end(), in.begin())) std::abort();
  return 0;
}
