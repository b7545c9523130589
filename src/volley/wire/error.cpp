#include <volley/wire/error.hpp>

#include <string>

namespace volley::wire {
namespace {

class WireCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "volley.wire"; }
  std::string message(int value) const override {
    switch (static_cast<Errc>(value)) {
      case Errc::unknown_type: return "unknown message type";
      case Errc::length_over_maximum: return "length over the protocol maximum";
      case Errc::body_too_long: return "body over the type's limit";
      case Errc::body_too_short: return "body under the type's minimum";
      case Errc::buffer_too_small: return "output buffer too small";
      case Errc::bad_checksum: return "bad checksum";
      case Errc::length_below_header: return "length below the header size";
      case Errc::length_mismatch: return "length field disagrees with the frame's size";
      case Errc::corrupt_ring: return "shared-memory ring corrupt (an index or header no honest peer writes)";
    }
    return "unknown wire error";
  }
};

}  // namespace

const std::error_category& wire_category() noexcept {
  static const WireCategory category;
  return category;
}

}  // namespace volley::wire
