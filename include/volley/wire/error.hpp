#pragma once
// Wire errors are std::error_code values so that callers choose between the
// error_code& overloads and the throwing ones, as in Asio.
#include <system_error>

namespace volley::wire {

enum class Errc {
  unknown_type = 1,        // a type the protocol does not define (fatal: framing is suspect)
  length_over_maximum,     // a length no frame of this protocol may have (fatal)
  body_too_long,           // over the type's limit but within the protocol maximum (frame skipped)
  body_too_short,          // under the type's minimum (frame skipped)
  buffer_too_small,        // the caller's output buffer cannot hold the encoding
  bad_checksum,            // checked frame: the payload's XOR does not match
  length_below_header,     // checked frame: a total length under the 5-byte header
  length_mismatch,         // an outgoing frame whose length field disagrees with its size
  corrupt_ring,            // shared memory: a peer's index or header that no honest peer writes
};

const std::error_category& wire_category() noexcept;

inline std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), wire_category()};
}

}  // namespace volley::wire

/// @cond TRAITS (the error-code traits: no documentation of their own)
template <>
struct std::is_error_code_enum<volley::wire::Errc> : std::true_type {};
/// @endcond
