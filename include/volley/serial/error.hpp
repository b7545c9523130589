#pragma once
// Serialization errors, as std::error_code values (category "volley.serial").
#include <system_error>

namespace volley::serial {

enum class Errc {
  truncated = 1,          // the input ends inside a value
  length_exceeds_input,   // a string or vector length larger than what remains
  trailing_bytes,         // the value ended before the input did
  invalid_bool,           // a bool byte other than 0 or 1
  invalid_enum,           // an enum value outside its declared range
  invalid_optional,       // an optional's presence byte other than 0 or 1
  buffer_too_small,       // the output buffer cannot hold the encoding
  too_long,               // a string or vector longer than a u32 length can say
};

const std::error_category& serial_category() noexcept;
inline std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), serial_category()}; }

}  // namespace volley::serial

/// @cond TRAITS (the error-code traits: no documentation of their own)
template <>
struct std::is_error_code_enum<volley::serial::Errc> : std::true_type {};
/// @endcond
