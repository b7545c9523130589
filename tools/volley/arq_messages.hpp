#pragma once
// What the ARQ tools send: [sequence u64][input time ns u64][filler], and the
// per-message delay statistics (mean, median, stdev, min, max, p99).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include <volley/wire/byte_order.hpp>

namespace volley::tools {

inline constexpr std::size_t kArqStampSize = 16;

inline std::vector<std::byte> stamped_message(std::uint64_t seq, std::int64_t input_ns, std::size_t size) {
  std::vector<std::byte> m(std::max(size, kArqStampSize), std::byte{0x5A});
  wire::store_u32_be(m.data(), static_cast<std::uint32_t>(seq >> 32));
  wire::store_u32_be(m.data() + 4, static_cast<std::uint32_t>(seq));
  wire::store_u32_be(m.data() + 8, static_cast<std::uint32_t>(static_cast<std::uint64_t>(input_ns) >> 32));
  wire::store_u32_be(m.data() + 12, static_cast<std::uint32_t>(input_ns));
  return m;
}

// The filler after the stamp is intact (what stamped_message wrote).
inline bool intact(std::span<const std::byte> m) {
  return std::all_of(m.begin() + static_cast<std::ptrdiff_t>(kArqStampSize), m.end(),
                     [](std::byte b) { return b == std::byte{0x5A}; });
}

struct Stamp {
  std::uint64_t seq;
  std::int64_t input_ns;
};
inline Stamp read_stamp(std::span<const std::byte> m) {
  const auto hi = [&](std::size_t at) { return (std::uint64_t{wire::load_u32_be(m.data() + at)} << 32) | wire::load_u32_be(m.data() + at + 4); };
  return {hi(0), static_cast<std::int64_t>(hi(8))};
}

struct DeliveryRecord {
  std::uint64_t seq;
  std::int64_t input_ns;
  std::int64_t delivered_ns;
  double delay_ms() const { return static_cast<double>(delivered_ns - input_ns) / 1e6; }
};

struct DelayStats {
  std::size_t count = 0;
  double mean = 0, median = 0, stdev = 0, min = 0, p99 = 0, max = 0;
};

inline DelayStats delay_stats(const std::vector<DeliveryRecord>& records) {
  DelayStats s;
  s.count = records.size();
  if (records.empty()) return s;
  std::vector<double> d;
  for (const auto& r : records) d.push_back(r.delay_ms());
  std::sort(d.begin(), d.end());
  for (double x : d) s.mean += x;
  s.mean /= static_cast<double>(d.size());
  for (double x : d) s.stdev += (x - s.mean) * (x - s.mean);
  s.stdev = std::sqrt(s.stdev / static_cast<double>(d.size()));
  s.median = d[d.size() / 2];
  s.min = d.front();
  s.max = d.back();
  s.p99 = d[std::min(d.size() - 1, static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(d.size()))) - 1)];
  return s;
}

inline boost::json::object to_json(const DelayStats& s) {
  return {{"count", s.count}, {"mean_ms", s.mean}, {"median_ms", s.median}, {"stdev_ms", s.stdev},
          {"min_ms", s.min},  {"p99_ms", s.p99},   {"max_ms", s.max}};
}

inline constexpr const char* kDeliveryCsvHeader = "seq,input_ns,delivered_ns,delay_ms\n";

inline void write_csv_row(std::ostream& out, const DeliveryRecord& r) {
  out << r.seq << ',' << r.input_ns << ',' << r.delivered_ns << ',' << r.delay_ms() << '\n';
}

inline void write_csv(const std::string& path, const std::vector<DeliveryRecord>& records) {
  std::ofstream out(path);
  out << kDeliveryCsvHeader;
  for (const auto& r : records) write_csv_row(out, r);
}

}  // namespace volley::tools
