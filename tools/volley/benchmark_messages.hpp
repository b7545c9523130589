#pragma once
// The ping-pong and request/reply benchmark vocabulary: Ping{t} is answered by Pong{-t, t, 'X'}, a
// Request by a Reply carrying the same values in another order.
#include <cstdint>
#include <string>

namespace volley::benchmarks {

struct Ping {
  std::int64_t t;
  bool operator==(const Ping&) const = default;
};

struct Pong {
  std::int64_t minus_t;
  std::int64_t t;
  char mark;
  bool operator==(const Pong&) const = default;
};

struct Request {
  std::string text;
  double value;
  std::int8_t small;
  std::int16_t medium;
  std::int32_t large;
  bool operator==(const Request&) const = default;
};

struct Reply {
  std::int32_t large;
  std::int16_t medium;
  std::int8_t small;
  double value;
  std::string text;
  bool operator==(const Reply&) const = default;
};

inline Pong answer(const Ping& p) { return {-p.t, p.t, 'X'}; }
inline Reply answer(const Request& r) { return {r.large, r.medium, r.small, r.value, r.text}; }

}  // namespace volley::benchmarks
