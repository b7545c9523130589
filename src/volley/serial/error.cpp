#include <volley/serial/error.hpp>

#include <string>

namespace volley::serial {
namespace {

class SerialCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "volley.serial"; }
  std::string message(int value) const override {
    switch (static_cast<Errc>(value)) {
      case Errc::truncated: return "truncated input";
      case Errc::length_exceeds_input: return "a length larger than what remains of the input";
      case Errc::trailing_bytes: return "trailing bytes after the value";
      case Errc::invalid_bool: return "invalid bool";
      case Errc::invalid_enum: return "enum value out of range";
      case Errc::invalid_optional: return "invalid optional tag";
      case Errc::buffer_too_small: return "output buffer too small";
      case Errc::too_long: return "string or vector too long for a u32 length";
    }
    return "unknown serialization error";
  }
};

}  // namespace

const std::error_category& serial_category() noexcept {
  static const SerialCategory category;
  return category;
}

}  // namespace volley::serial
