#include <gtest/gtest.h>

#include <limits>
#include <typeinfo>
#include <random>

#include <volley/serial/binary.hpp>
#include <volley/rpc/server.hpp>
#include "benchmark_messages.hpp"

#include "bytes.hpp"

using namespace volley::serial;
using namespace volley::benchmarks;
using volley::test::hex;

namespace shapes {

enum class Color : std::uint8_t { red, green, blue };
enum class Wide : std::int32_t { low = -5, high = 5 };

struct Ints {
  std::int8_t a; std::uint8_t b; std::int16_t c; std::uint16_t d;
  std::int32_t e; std::uint32_t f; std::int64_t g; std::uint64_t h;
  bool operator==(const Ints&) const = default;
};
struct Floats {
  bool a; char b; float c; double d;
  bool operator==(const Floats&) const = default;
};
struct Text {
  std::string s;
  bool operator==(const Text&) const = default;
};
struct Numbers {
  std::vector<std::int32_t> v;
  bool operator==(const Numbers&) const = default;
};
struct Fixed {
  std::array<std::uint16_t, 5> a;
  bool operator==(const Fixed&) const = default;
};
struct Maybe {
  std::optional<std::int64_t> n;
  std::optional<std::string> s;
  bool operator==(const Maybe&) const = default;
};
struct Colors {
  Color c;
  std::vector<Color> more;
  Wide w;
  bool operator==(const Colors&) const = default;
};
struct Nested {
  Ints i;
  Text t;
  std::vector<Floats> f;
  bool operator==(const Nested&) const = default;
};
struct Lists {
  std::vector<std::string> names;
  std::vector<std::vector<std::uint8_t>> blobs;
  bool operator==(const Lists&) const = default;
};
struct Deep {
  std::array<std::optional<Fixed>, 2> slots;
  std::optional<Nested> inner;
  bool operator==(const Deep&) const = default;
};
struct Empty {
  bool operator==(const Empty&) const = default;
};
struct WithEmpty {
  Empty e;
  std::vector<std::optional<Empty>> many;  // a vector<Empty> does not compile: see binary.hpp
  std::int32_t x;
  bool operator==(const WithEmpty&) const = default;
};

}  // namespace shapes

template <>
struct volley::serial::EnumRange<shapes::Color> {
  static constexpr int min = 0, max = 2;
};
template <>
struct volley::serial::EnumRange<shapes::Wide> {
  static constexpr int min = -5, max = 5;
};

namespace {

template <class T>
void randomize(T& v, std::mt19937_64& rng);

template <class T>
void randomize_value(T& v, std::mt19937_64& rng) {
  using namespace volley::serial::detail;
  if constexpr (std::is_same_v<T, bool>) {
    v = rng() & 1;
  } else if constexpr (std::is_same_v<T, shapes::Color>) {
    v = static_cast<shapes::Color>(rng() % 3);
  } else if constexpr (std::is_same_v<T, shapes::Wide>) {
    v = static_cast<shapes::Wide>(static_cast<int>(rng() % 11) - 5);
  } else if constexpr (std::is_floating_point_v<T>) {
    v = static_cast<T>(std::uniform_real_distribution<double>(-1e6, 1e6)(rng));
  } else if constexpr (std::is_integral_v<T>) {
    v = static_cast<T>(rng());
  } else if constexpr (std::is_same_v<T, std::string>) {
    v.assign(rng() % 40, 'a');
    for (auto& c : v) c = static_cast<char>(rng());  // any byte, NULs included
  } else if constexpr (is_vector<T>::value) {
    v.resize(rng() % 6);
    for (auto& e : v) randomize(e, rng);
  } else if constexpr (is_array<T>::value) {
    for (auto& e : v) randomize(e, rng);
  } else if constexpr (is_optional<T>::value) {
    if (rng() & 1) {
      v.emplace();
      randomize(*v, rng);
    } else {
      v.reset();
    }
  } else {
    boost::pfr::for_each_field(v, [&rng](auto& f) { randomize(f, rng); });
  }
}

template <class T>
void randomize(T& v, std::mt19937_64& rng) {
  randomize_value(v, rng);
}

template <class T>
void check_shape(int iterations) {
  std::mt19937_64 rng(1234);
  for (int i = 0; i < iterations; ++i) {
    T value{};
    randomize(value, rng);
    std::vector<std::byte> bytes;
    encode_append(value, bytes);
    ASSERT_EQ(bytes.size(), encoded_size(value));
    T back{};
    std::error_code ec;
    ASSERT_TRUE(decode(bytes, back, ec)) << ec.message() << " " << typeid(T).name();
    ASSERT_TRUE(back == value) << typeid(T).name() << " iteration " << i;
    // Every truncation is refused.
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
      T partial{};
      ASSERT_FALSE(decode(std::span(bytes).first(cut), partial, ec)) << "cut at " << cut;
      ASSERT_TRUE(ec == volley::serial::Errc::truncated || ec == volley::serial::Errc::length_exceeds_input) << ec.message();
    }
    // And so is one byte too many.
    bytes.push_back(std::byte{0});
    ASSERT_FALSE(decode(bytes, back, ec));
    ASSERT_EQ(ec, volley::serial::Errc::trailing_bytes);
  }
}

}  // namespace

TEST(Serial, SeedMessagesByteExact) {
  std::vector<std::byte> out;
  encode_append(Ping{0x0102030405060708}, out);
  EXPECT_EQ(hex(out), "01 02 03 04 05 06 07 08");
  out.clear();
  encode_append(answer(Ping{1}), out);
  EXPECT_EQ(hex(out), "ff ff ff ff ff ff ff ff 00 00 00 00 00 00 00 01 58");
  out.clear();
  encode_append(Request{"hi", 1.5, 1, 2, 3}, out);
  EXPECT_EQ(hex(out), "00 00 00 02 68 69 3f f8 00 00 00 00 00 00 01 00 02 00 00 00 03");
  out.clear();
  encode_append(answer(Request{"hi", 1.5, 1, 2, 3}), out);
  EXPECT_EQ(hex(out), "00 00 00 03 00 02 01 3f f8 00 00 00 00 00 00 00 00 00 02 68 69");
  const auto request = out;  // the Reply's bytes; decode them back as well
  EXPECT_EQ(decode<Reply>(request), answer(Request{"hi", 1.5, 1, 2, 3}));
}

TEST(Serial, OtherLayoutsByteExact) {
  std::vector<std::byte> out;
  encode_append(shapes::Maybe{std::nullopt, std::string("A")}, out);
  EXPECT_EQ(hex(out), "00 01 00 00 00 01 41");
  out.clear();
  encode_append(shapes::Colors{shapes::Color::blue, {shapes::Color::red}, shapes::Wide::low}, out);
  EXPECT_EQ(hex(out), "02 00 00 00 01 00 ff ff ff fb");
  out.clear();
  encode_append(shapes::Floats{true, 'z', -2.0f, 0.0}, out);
  EXPECT_EQ(hex(out), "01 7a c0 00 00 00 00 00 00 00 00 00 00 00");
  out.clear();
  encode_append(shapes::Fixed{{1, 2, 3, 4, 0xFFFF}}, out);
  EXPECT_EQ(hex(out), "00 01 00 02 00 03 00 04 ff ff");
}

TEST(Serial, RandomValuesOfADozenShapesRoundTripAndTruncationsFail) {
  check_shape<shapes::Ints>(200);
  check_shape<shapes::Floats>(200);
  check_shape<shapes::Text>(200);
  check_shape<shapes::Numbers>(200);
  check_shape<shapes::Fixed>(100);
  check_shape<shapes::Maybe>(200);
  check_shape<shapes::Colors>(200);
  check_shape<shapes::Nested>(100);
  check_shape<shapes::Lists>(100);
  check_shape<shapes::Deep>(100);
  check_shape<shapes::WithEmpty>(100);
  check_shape<Request>(200);
  check_shape<Reply>(100);
  check_shape<Pong>(50);
}

TEST(Serial, InvalidValuesAreRefused) {
  std::error_code ec;
  shapes::Floats f{};
  EXPECT_FALSE(decode(volley::test::bytes_of("\x02zAAAABBBBBBBB"), f, ec));
  EXPECT_EQ(ec, volley::serial::Errc::invalid_bool);
  shapes::Colors c{};
  EXPECT_FALSE(decode(volley::test::bytes_of("\x03\x00\x00\x00\x00\x00\x00\x00\x00"), c, ec));
  EXPECT_EQ(ec, volley::serial::Errc::invalid_enum);
  EXPECT_FALSE(decode(volley::test::bytes_of("\x00\x00\x00\x00\x00\xff\xff\xff\xfa"), c, ec));  // Wide -6
  EXPECT_EQ(ec, volley::serial::Errc::invalid_enum);
  shapes::Maybe m{};
  EXPECT_FALSE(decode(volley::test::bytes_of("\x02"), m, ec));
  EXPECT_EQ(ec, volley::serial::Errc::invalid_optional);
  // A length far beyond the input fails before any allocation is attempted.
  shapes::Numbers n{};
  EXPECT_FALSE(decode(volley::test::bytes_of("\xff\xff\xff\xff\x00\x00\x00\x01"), n, ec));
  EXPECT_EQ(ec, volley::serial::Errc::length_exceeds_input);
  shapes::Text t{};
  EXPECT_FALSE(decode(volley::test::bytes_of("\x00\x00\x00\x05hi"), t, ec));
  EXPECT_EQ(ec, volley::serial::Errc::length_exceeds_input);
  EXPECT_THROW(decode<shapes::Text>(volley::test::bytes_of("\x00")), std::system_error);
  EXPECT_EQ(ec.category().name(), std::string("volley.serial"));
}

TEST(Serial, EncodeChecksTheBuffer) {
  std::array<std::byte, 4> small{};
  std::error_code ec;
  EXPECT_EQ(encode(Ping{1}, small, ec), 0u);
  EXPECT_EQ(ec, volley::serial::Errc::buffer_too_small);
  EXPECT_THROW(encode(Ping{1}, small), std::system_error);
  std::array<std::byte, 8> exact{};
  EXPECT_EQ(encode(Ping{7}, exact), 8u);
}

struct View {
  std::string_view name;
  std::uint16_t id;
};

TEST(Serial, StringViewDecodesWithoutACopy) {
  std::vector<std::byte> bytes;
  encode_append(Request{"a string long enough to need the heap as std::string", 1, 2, 3, 4}, bytes);
  struct RequestView {
    std::string_view text;
    double value;
    std::int8_t small;
    std::int16_t medium;
    std::int32_t large;
  } view{};
  std::error_code ec;
  ASSERT_TRUE(decode(bytes, view, ec)) << ec.message();
  EXPECT_EQ(view.text, "a string long enough to need the heap as std::string");
  EXPECT_EQ(reinterpret_cast<const std::byte*>(view.text.data()), bytes.data() + 4);  // points into the input
  EXPECT_EQ(view.large, 4);
  std::vector<std::byte> again;
  encode_append(View{"x", 9}, again);
  EXPECT_EQ(hex(again), "00 00 00 01 78 00 09");
}

TEST(Serial, RpcErrorFrameExampleOfTheProtocolDocument) {
  std::vector<std::byte> out;
  volley::rpc::make_error_frame(5, volley::rpc::ErrorCode::unknown_message_id, "x", out);
  EXPECT_EQ(hex(out), "00 00 00 05 00 00 00 09 ff ff ff ff 00 00 00 01 00 00 00 01 78");
}
