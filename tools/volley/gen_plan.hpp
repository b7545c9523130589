#pragma once
// What the traffic generator sends, decided before any socket exists: the
// message specs of the command line, their interleaved order within every 100
// messages, and blocks of pre-encoded frames the connections send again and again.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <volley/gnb/protocol.hpp>

namespace volley::tools {

// -m TYPE:SIZE:FRACTION, TYPE in hex, SIZE the body size, FRACTION messages of every 100.
struct MessageSpec {
  std::uint16_t type = 0;
  std::uint32_t size = 0;
  unsigned fraction = 0;
};

// Whether the target answers a message of this spec (a control message with
// room for its transaction id); the generator matches each answer to it.
inline bool expects_reply(const MessageSpec& spec) {
  return spec.type == static_cast<std::uint16_t>(gnb::MessageType::control) && spec.size >= 4;
}

inline constexpr std::uint32_t kMaxInvalidSize = 16 * 1024 * 1024;  // --allow-invalid still bounds memory

// Returns the spec, or nullopt with `error` saying what is wrong.
std::optional<MessageSpec> parse_spec(std::string_view text, std::string& error);
// Checks the set: fractions add up to 100; sizes within their type's limits and
// types known unless `allow_invalid`. Returns an empty string when valid.
std::string validate_specs(const std::vector<MessageSpec>& specs, bool allow_invalid);

// 100 spec indices, each spec appearing `fraction` times, spread evenly (smooth
// weighted round-robin) rather than in runs.
std::vector<std::size_t> interleave(const std::vector<MessageSpec>& specs);

enum class PayloadKind { filler, random };

struct FrameBlock {
  struct ControlSlot {
    std::size_t body_offset;  // where the transaction id goes
    std::size_t body_size;
  };
  struct Frame {
    std::size_t offset;
    std::size_t size;  // wire size
    std::size_t spec;
    int control = -1;  // index into controls, or -1
  };
  std::vector<std::byte> bytes;
  std::vector<Frame> frames;  // in order: frames[i] is message i of the block
  std::vector<ControlSlot> controls;
};

// `repeats` cycles of `order`, back to back. Control messages big enough to hold a
// transaction id get a slot so the sender can stamp each one with a fresh id.
FrameBlock build_block(const std::vector<MessageSpec>& specs, const std::vector<std::size_t>& order,
                       std::size_t repeats, PayloadKind payload, std::uint64_t seed);

// How many cycles make a block of at least `target_bytes`.
std::size_t cycles_for(const std::vector<MessageSpec>& specs, const std::vector<std::size_t>& order,
                       std::size_t target_bytes);

}  // namespace volley::tools
