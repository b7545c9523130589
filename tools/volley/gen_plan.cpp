#include "gen_plan.hpp"

#include <charconv>
#include <random>

#include <fmt/core.h>

#include <volley/gnb/protocol.hpp>

namespace volley::tools {


namespace {

template <class T>
bool parse_number(std::string_view s, T& out, int base) {
  if (base == 16 && (s.starts_with("0x") || s.starts_with("0X"))) s.remove_prefix(2);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

std::optional<MessageSpec> parse_spec(std::string_view text, std::string& error) {
  const auto c1 = text.find(':');
  const auto c2 = c1 == std::string_view::npos ? c1 : text.find(':', c1 + 1);
  if (c2 == std::string_view::npos || text.find(':', c2 + 1) != std::string_view::npos) {
    error = fmt::format("'{}': expected TYPE:SIZE:FRACTION, for example 1001:64:25", text);
    return std::nullopt;
  }
  MessageSpec spec;
  if (!parse_number(text.substr(0, c1), spec.type, 16)) {
    error = fmt::format("'{}': TYPE must be a 16-bit hex number such as 1001 or 0x8001", text);
    return std::nullopt;
  }
  if (!parse_number(text.substr(c1 + 1, c2 - c1 - 1), spec.size, 10)) {
    error = fmt::format("'{}': SIZE must be a decimal byte count", text);
    return std::nullopt;
  }
  if (!parse_number(text.substr(c2 + 1), spec.fraction, 10) || spec.fraction == 0 || spec.fraction > 100) {
    error = fmt::format("'{}': FRACTION must be a whole number from 1 to 100 (messages of every 100)", text);
    return std::nullopt;
  }
  return spec;
}

std::string validate_specs(const std::vector<MessageSpec>& specs, bool allow_invalid) {
  if (specs.empty()) return "at least one -m TYPE:SIZE:FRACTION is needed";
  unsigned total = 0;
  for (const auto& s : specs) {
    total += s.fraction;
    const auto index = gnb::type_index(s.type);
    if (allow_invalid) {
      if (s.size > kMaxInvalidSize)
        return fmt::format("{:04x}:{}: SIZE over {} bytes even with --allow-invalid", s.type, s.size, kMaxInvalidSize);
      continue;
    }
    if (!index)
      return fmt::format("type {:04x} is not a gNB message type (1001, 1002, 1003, 1004, 8001); "
                         "--allow-invalid sends it anyway",
                         s.type);
    const auto& info = gnb::kTypes[*index];
    if (s.size > info.max_body || s.size < info.min_body)
      return fmt::format("{:04x}:{}: a {} body must be {} to {} bytes; --allow-invalid sends it anyway", s.type,
                         s.size, info.name, info.min_body, info.max_body);
  }
  if (total != 100) return fmt::format("the fractions add up to {}, not 100", total);
  return {};
}

std::vector<std::size_t> interleave(const std::vector<MessageSpec>& specs) {
  std::vector<long> current(specs.size(), 0);
  std::vector<std::size_t> order;
  order.reserve(100);
  for (int slot = 0; slot < 100; ++slot) {
    std::size_t best = 0;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      current[i] += specs[i].fraction;
      if (current[i] > current[best]) best = i;
    }
    current[best] -= 100;
    order.push_back(best);
  }
  return order;
}

std::size_t cycles_for(const std::vector<MessageSpec>& specs, const std::vector<std::size_t>& order,
                       std::size_t target_bytes) {
  std::size_t cycle = 0;
  for (std::size_t i : order) cycle += gnb::kHeaderSize + specs[i].size;
  return std::max<std::size_t>(1, (target_bytes + cycle - 1) / cycle);
}

FrameBlock build_block(const std::vector<MessageSpec>& specs, const std::vector<std::size_t>& order,
                       std::size_t repeats, PayloadKind payload, std::uint64_t seed) {
  FrameBlock block;
  std::size_t total = 0;
  for (std::size_t i : order) total += gnb::kHeaderSize + specs[i].size;
  block.bytes.resize(total * repeats);
  block.frames.reserve(order.size() * repeats);
  std::mt19937_64 rng(seed);
  std::size_t at = 0;
  for (std::size_t r = 0; r < repeats; ++r) {
    for (std::size_t spec_index : order) {
      const MessageSpec& spec = specs[spec_index];
      std::byte* frame = block.bytes.data() + at;
      gnb::write_header(frame, spec.type, spec.size);
      std::byte* body = frame + gnb::kHeaderSize;
      if (payload == PayloadKind::random) {
        for (std::uint32_t k = 0; k < spec.size; ++k) body[k] = static_cast<std::byte>(rng());
      } else {
        std::fill_n(body, spec.size, std::byte{0x5A});
      }
      FrameBlock::Frame f{at, gnb::kHeaderSize + spec.size, spec_index, -1};
      if (expects_reply(spec)) {
        f.control = static_cast<int>(block.controls.size());
        block.controls.push_back({at + gnb::kHeaderSize, spec.size});
      }
      block.frames.push_back(f);
      at += f.size;
    }
  }
  return block;
}

}  // namespace volley::tools
