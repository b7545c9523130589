#pragma once
// Binary serialization of plain aggregate structs by reflection (boost::pfr):
// no code per struct. Layout (docs/PROTOCOL.md), network byte order throughout:
//   bool, char, u8/i8: 1 byte; integers of 2, 4, 8 bytes big-endian (two's
//   complement); enums as their underlying integer; float and double as their
//   IEEE 754 bits; std::string / std::string_view: u32 length + bytes;
//   std::vector: u32 count + elements; std::array: its elements; std::optional:
//   u8 presence (0 or 1) + value; aggregates: their fields in declaration order.
// Vector elements must encode to at least one byte (so the input bounds a count).
// encode() computes the exact size first and writes once; decode() checks
// every read, refuses trailing bytes, and allocates only what the decoded
// strings and vectors hold. Decoding into std::string_view points into the input.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include <boost/pfr/core.hpp>
#include <boost/pfr/tuple_size.hpp>

#include <volley/serial/error.hpp>

namespace volley::serial {

// Declare an enum's valid range to have decoding check it:
//   template <> struct EnumRange<Color> { static constexpr auto min = 0, max = 2; };
template <class E>
struct EnumRange {};

namespace detail {

template <class T> struct is_vector : std::false_type {};
template <class T, class A> struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T> struct is_array : std::false_type {};
template <class T, std::size_t N> struct is_array<std::array<T, N>> : std::true_type {};
template <class T> struct is_optional : std::false_type {};
template <class T> struct is_optional<std::optional<T>> : std::true_type {};

template <class E>
concept HasEnumRange = requires { EnumRange<E>::min; EnumRange<E>::max; };

template <class T>
concept Scalar = std::is_arithmetic_v<T> || std::is_enum_v<T>;

template <class T>
concept Record = std::is_aggregate_v<T> && !is_array<T>::value && !std::is_array_v<T>;

template <class T>
using uint_of = std::conditional_t<sizeof(T) == 1, std::uint8_t,
                std::conditional_t<sizeof(T) == 2, std::uint16_t,
                std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;

template <class T>
uint_of<T> to_bits(T v) noexcept {
  if constexpr (std::is_enum_v<T>) {
    return static_cast<uint_of<T>>(static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::bit_cast<uint_of<T>>(v);
  } else {
    return static_cast<uint_of<T>>(v);
  }
}

template <class T>
T from_bits(uint_of<T> bits) noexcept {
  if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(static_cast<std::underlying_type_t<T>>(bits));
  } else if constexpr (std::is_floating_point_v<T>) {
    return std::bit_cast<T>(bits);
  } else {
    return static_cast<T>(bits);
  }
}

inline void put_uint(std::byte*& p, std::uint64_t v, std::size_t width) noexcept {
  for (std::size_t i = 0; i < width; ++i) p[i] = static_cast<std::byte>(v >> (8 * (width - 1 - i)));
  p += width;
}

// ---- sizes ----

template <class T>
constexpr std::size_t min_size() noexcept;  // the fewest bytes any value of T encodes to

template <class T>
std::size_t size_of(const T& v) noexcept {
  if constexpr (std::is_same_v<T, bool> || Scalar<T>) {
    return sizeof(T);
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
    return 4 + v.size();
  } else if constexpr (is_vector<T>::value) {
    using E = typename T::value_type;
    if constexpr (Scalar<E>) {
      return 4 + v.size() * sizeof(E);
    } else {
      std::size_t n = 4;
      for (const auto& e : v) n += size_of(e);
      return n;
    }
  } else if constexpr (is_array<T>::value) {
    std::size_t n = 0;
    for (const auto& e : v) n += size_of(e);
    return n;
  } else if constexpr (is_optional<T>::value) {
    return 1 + (v ? size_of(*v) : 0);
  } else {
    static_assert(Record<T>, "volley::serial: unsupported type");
    std::size_t n = 0;
    boost::pfr::for_each_field(v, [&n](const auto& f) { n += size_of(f); });
    return n;
  }
}

template <class T, std::size_t... I>
constexpr std::size_t min_size_of_fields(std::index_sequence<I...>) noexcept {
  return (std::size_t{0} + ... + min_size<boost::pfr::tuple_element_t<I, T>>());
}

template <class T>
constexpr std::size_t min_size() noexcept {
  if constexpr (std::is_same_v<T, bool> || Scalar<T>) {
    return sizeof(T);
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view> || is_vector<T>::value) {
    return 4;
  } else if constexpr (is_array<T>::value) {
    return std::tuple_size_v<T> * min_size<typename T::value_type>();
  } else if constexpr (is_optional<T>::value) {
    return 1;
  } else {
    return min_size_of_fields<T>(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  }
}

// ---- writing (the buffer is known to be large enough) ----

template <class T>
void write(std::byte*& p, const T& v) noexcept {
  if constexpr (std::is_same_v<T, bool>) {
    *p++ = std::byte{static_cast<unsigned char>(v ? 1 : 0)};
  } else if constexpr (Scalar<T>) {
    put_uint(p, to_bits(v), sizeof(T));
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
    put_uint(p, v.size(), 4);
    if (!v.empty()) std::memcpy(p, v.data(), v.size());
    p += v.size();
  } else if constexpr (is_vector<T>::value) {
    put_uint(p, v.size(), 4);
    for (const auto& e : v) write(p, e);
  } else if constexpr (is_array<T>::value) {
    for (const auto& e : v) write(p, e);
  } else if constexpr (is_optional<T>::value) {
    *p++ = std::byte{static_cast<unsigned char>(v ? 1 : 0)};
    if (v) write(p, *v);
  } else {
    boost::pfr::for_each_field(v, [&p](const auto& f) { write(p, f); });
  }
}

// ---- reading (every read checked) ----

struct Reader {
  const std::byte* p;
  const std::byte* end;
  Errc error{};

  bool failed() const noexcept { return error != Errc{}; }
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end - p); }
  bool need(std::size_t n) noexcept {
    if (failed()) return false;
    if (remaining() < n) {
      error = Errc::truncated;
      return false;
    }
    return true;
  }
  std::uint64_t get_uint(std::size_t width) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < width; ++i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
    p += width;
    return v;
  }
  // A u32 count of elements that each take at least `min_each` bytes.
  bool get_count(std::size_t min_each, std::size_t& count) noexcept {
    if (!need(4)) return false;
    count = static_cast<std::size_t>(get_uint(4));
    if (count > remaining() / min_each) {
      error = Errc::length_exceeds_input;
      return false;
    }
    return true;
  }
};

template <class T>
void read(Reader& r, T& v) {
  if (r.failed()) return;
  if constexpr (std::is_same_v<T, bool>) {
    if (!r.need(1)) return;
    const auto b = std::to_integer<unsigned>(*r.p++);
    if (b > 1) r.error = Errc::invalid_bool;
    v = b == 1;
  } else if constexpr (Scalar<T>) {
    if (!r.need(sizeof(T))) return;
    v = from_bits<T>(static_cast<uint_of<T>>(r.get_uint(sizeof(T))));
    if constexpr (std::is_enum_v<T> && HasEnumRange<T>) {
      const auto u = static_cast<std::underlying_type_t<T>>(v);
      if (u < EnumRange<T>::min || u > EnumRange<T>::max) r.error = Errc::invalid_enum;
    }
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
    std::size_t n = 0;
    if (!r.get_count(1, n)) return;
    if constexpr (std::is_same_v<T, std::string>) {
      v.assign(reinterpret_cast<const char*>(r.p), n);  // reuses the string's capacity: no allocation when it fits
    } else {
      v = T(reinterpret_cast<const char*>(r.p), n);
    }
    r.p += n;
  } else if constexpr (is_vector<T>::value) {
    using E = typename T::value_type;
    // The input's size bounds a count only when every element takes a byte at
    // least; otherwise a few bytes could ask for billions of elements.
    static_assert(min_size<E>() > 0, "volley::serial: vector elements must encode to at least one byte");
    std::size_t n = 0;
    if (!r.get_count(min_size<E>(), n)) return;
    v.clear();
    v.resize(n);
    for (auto& e : v) {
      read(r, e);
      if (r.failed()) return;
    }
  } else if constexpr (is_array<T>::value) {
    for (auto& e : v) read(r, e);
  } else if constexpr (is_optional<T>::value) {
    if (!r.need(1)) return;
    const auto tag = std::to_integer<unsigned>(*r.p++);
    if (tag > 1) {
      r.error = Errc::invalid_optional;
    } else if (tag == 0) {
      v.reset();
    } else {
      v.emplace();
      read(r, *v);
    }
  } else {
    boost::pfr::for_each_field(v, [&r](auto& f) { read(r, f); });
  }
}

}  // namespace detail

// Exactly how many bytes encode(v) writes.
template <class T>
std::size_t encoded_size(const T& v) noexcept {
  return detail::size_of(v);
}

template <class T>
std::size_t encode(const T& v, std::span<std::byte> out, std::error_code& ec) noexcept {
  const std::size_t n = encoded_size(v);
  if (out.size() < n) {
    ec = Errc::buffer_too_small;
    return 0;
  }
  std::byte* p = out.data();
  detail::write(p, v);
  ec.clear();
  return n;
}

template <class T>
std::size_t encode(const T& v, std::span<std::byte> out) {
  std::error_code ec;
  const std::size_t n = encode(v, out, ec);
  if (ec) throw std::system_error(ec, "volley::serial::encode");
  return n;
}

// Appends the encoding to `out` (one resize).
template <class T>
void encode_append(const T& v, std::vector<std::byte>& out) {
  const std::size_t at = out.size();
  out.resize(at + encoded_size(v));
  std::byte* p = out.data() + at;
  detail::write(p, v);
}

// Decodes the whole of `in` into `out`; on error `out` is unspecified but valid.
template <class T>
bool decode(std::span<const std::byte> in, T& out, std::error_code& ec) {
  detail::Reader r{in.data(), in.data() + in.size()};
  detail::read(r, out);
  if (!r.failed() && r.remaining() != 0) r.error = Errc::trailing_bytes;
  if (r.failed()) {
    ec = r.error;
    return false;
  }
  ec.clear();
  return true;
}

template <class T>
T decode(std::span<const std::byte> in) {
  T out{};
  std::error_code ec;
  if (!decode(in, out, ec)) throw std::system_error(ec, "volley::serial::decode");
  return out;
}

}  // namespace volley::serial
