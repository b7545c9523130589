#include <volley/arq/fec.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include <volley/arq/packet.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/crc32c.hpp>

#include "checksum.hpp"

#include "gf256.hpp"

namespace volley::arq {

using wire::load_u16_be;
using wire::load_u32_be;
using wire::store_u16_be;
using wire::store_u32_be;

namespace {

constexpr std::size_t kRepairCrcAt = 16;
constexpr std::size_t kReportCrcAt = 18;

using detail::packet_checksum;

// The probability that more than m of n packets are lost, each with probability p.
double more_lost_than(unsigned n, unsigned m, double p) {
  double at_most = 0, term = std::pow(1 - p, n);  // P(X = 0)
  for (unsigned x = 0; x <= m && x <= n; ++x) {
    at_most += term;
    if (p >= 1) break;
    term *= static_cast<double>(n - x) / static_cast<double>(x + 1) * p / (1 - p);
  }
  return std::max(0.0, 1 - at_most);
}

// dst += c * (source symbol of `packet`): its length prefix and bytes; the padding is zero.
void add_source(std::span<std::byte> dst, std::span<const std::byte> packet, std::uint8_t c) {
  std::array<std::byte, 2> prefix;
  store_u16_be(prefix.data(), static_cast<std::uint16_t>(packet.size()));
  gf256::mul_add(dst.first(2), prefix, c);
  gf256::mul_add(dst.subspan(2), packet, c);
}

}  // namespace

void encode_repair(const RepairPacket& packet, std::vector<std::byte>& out) {
  const std::size_t k = packet.sequences.size();
  out.resize(kRepairHeaderSize + 4 * k + packet.symbol.size());
  std::byte* p = out.data();
  store_u32_be(p, packet.conversation);
  p[kTypeAt] = static_cast<std::byte>(PacketType::repair);
  p[5] = std::byte{0};
  store_u32_be(p + 6, packet.group);
  p[10] = std::byte{static_cast<unsigned char>(k)};
  p[11] = std::byte{packet.m};
  p[12] = std::byte{packet.index};
  p[13] = std::byte{0};
  store_u16_be(p + 14, static_cast<std::uint16_t>(packet.symbol.size()));
  store_u32_be(p + kRepairCrcAt, 0);
  for (std::size_t j = 0; j < k; ++j) store_u32_be(p + kRepairHeaderSize + 4 * j, packet.sequences[j]);
  if (!packet.symbol.empty()) std::memcpy(p + kRepairHeaderSize + 4 * k, packet.symbol.data(), packet.symbol.size());
  store_u32_be(p + kRepairCrcAt, packet_checksum(out, kRepairCrcAt));
}

bool decode_repair(std::span<const std::byte> bytes, RepairPacket& out) {
  if (bytes.size() < kRepairHeaderSize || peek_type(bytes) != PacketType::repair) return false;
  const unsigned k = std::to_integer<unsigned>(bytes[10]);
  const unsigned m = std::to_integer<unsigned>(bytes[11]);
  const unsigned index = std::to_integer<unsigned>(bytes[12]);
  const std::size_t symbol = load_u16_be(bytes.data() + 14);
  if (k == 0 || k > kMaxGroupData || m == 0 || m > kMaxGroupRepair || index >= m || symbol < 2 ||
      std::to_integer<unsigned>(bytes[5]) != 0 || std::to_integer<unsigned>(bytes[13]) != 0 ||
      bytes.size() != kRepairHeaderSize + 4 * k + symbol)
    return false;
  if (load_u32_be(bytes.data() + kRepairCrcAt) != packet_checksum(bytes, kRepairCrcAt)) return false;
  out.conversation = load_u32_be(bytes.data());
  out.group = load_u32_be(bytes.data() + 6);
  out.m = static_cast<std::uint8_t>(m);
  out.index = static_cast<std::uint8_t>(index);
  out.sequences.resize(k);
  for (unsigned j = 0; j < k; ++j) out.sequences[j] = load_u32_be(bytes.data() + kRepairHeaderSize + 4 * j);
  out.symbol = bytes.subspan(kRepairHeaderSize + 4 * k);
  return true;
}

void encode_report(const FecReport& report, std::vector<std::byte>& out) {
  out.resize(kReportSize);
  std::byte* p = out.data();
  store_u32_be(p, report.conversation);
  p[kTypeAt] = static_cast<std::byte>(PacketType::report);
  p[5] = std::byte{0};
  store_u32_be(p + 6, report.groups);
  store_u32_be(p + 10, report.expected);
  store_u32_be(p + 14, report.lost);
  store_u32_be(p + kReportCrcAt, 0);
  store_u32_be(p + kReportCrcAt, packet_checksum(out, kReportCrcAt));
}

bool decode_report(std::span<const std::byte> bytes, FecReport& out) {
  if (bytes.size() != kReportSize || peek_type(bytes) != PacketType::report || std::to_integer<unsigned>(bytes[5]) != 0)
    return false;
  if (load_u32_be(bytes.data() + kReportCrcAt) != packet_checksum(bytes, kReportCrcAt)) return false;
  out = {load_u32_be(bytes.data()), load_u32_be(bytes.data() + 6), load_u32_be(bytes.data() + 10),
         load_u32_be(bytes.data() + 14)};
  return out.lost <= out.expected;
}

bool parse_fec(const std::string& text, FecConfig& config, std::string& error) {
  if (text == "adaptive") {
    config.adaptive = true;
    return true;
  }
  const auto colon = text.find(':');
  unsigned k = 0, m = 0;
  const auto number = [](std::string_view s, unsigned& v) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc{} && end == s.data() + s.size();
  };
  if (colon == std::string::npos || !number(std::string_view(text).substr(0, colon), k) ||
      !number(std::string_view(text).substr(colon + 1), m)) {
    error = "FEC must be K:M (data and repair packets per group) or 'adaptive', not '" + text + "'";
    return false;
  }
  if (k < 1 || k > kMaxGroupData || m < 1 || m > kMaxGroupRepair) {
    error = "FEC K must be 1 to " + std::to_string(kMaxGroupData) + " and M 1 to " + std::to_string(kMaxGroupRepair);
    return false;
  }
  config.adaptive = false;
  config.k = k;
  config.m = m;
  return true;
}

// ---------------------------------------------------------------- encoder

FecEncoder::FecEncoder(const FecConfig& config) : config_(config), loss_(config.initial_loss) {
  config_.k = std::clamp(config_.k, 1u, kMaxGroupData);
  config_.m = std::clamp(config_.m, 1u, kMaxGroupRepair);
  config_.max_k = std::clamp(config_.max_k, 1u, kMaxGroupData);
  config_.max_m = std::clamp(config_.max_m, 1u, kMaxGroupRepair);
  stats_.loss_estimate = loss_;
}

unsigned FecEncoder::repairs_for(unsigned k) const {
  if (!config_.adaptive) return config_.m;
  for (unsigned m = 1; m < config_.max_m; ++m)
    if (more_lost_than(k + m, m, loss_) <= config_.residual_target) return m;
  return config_.max_m;
}

void FecEncoder::start_group(Nanos now) {
  group_started_ = now;
  group_k_ = config_.k;
  if (config_.adaptive) {
    // As many as the sender sends within the delay bound: a bigger group would
    // only be closed by the timer. Rounded, not truncated: a sender pacing at
    // 25 ms that measures 25.1 ms still fills groups of four in 100 ms.
    const double fit =
        gap_ns_ > 0 ? static_cast<double>(config_.max_group_delay.count()) / gap_ns_ + 0.5 : config_.max_k;
    group_k_ = std::clamp(static_cast<unsigned>(fit), 1u, config_.max_k);
  }
}

void FecEncoder::on_data_sent(std::span<const std::byte> packet, Nanos now, const Transmit& transmit) {
  if (last_sent_) {
    const double gap = static_cast<double>((now - *last_sent_).count());
    gap_ns_ = gap_ns_ == 0 ? gap : 0.875 * gap_ns_ + 0.125 * gap;
  }
  last_sent_ = now;
  if (group_.empty()) start_group(now);
  group_.emplace_back(packet.begin(), packet.end());
  if (group_.size() >= group_k_) close_group(transmit);
}

void FecEncoder::poll(Nanos now, const Transmit& transmit) {
  if (!group_.empty() && now >= group_started_ + config_.max_group_delay) close_group(transmit);
}

std::optional<Nanos> FecEncoder::next_timeout() const {
  if (group_.empty()) return std::nullopt;
  return group_started_ + config_.max_group_delay;
}

void FecEncoder::close_group(const Transmit& transmit) {
  const unsigned k = static_cast<unsigned>(group_.size());
  const unsigned m = repairs_for(k);
  std::size_t longest = 0;
  for (const auto& p : group_) longest = std::max(longest, p.size());
  RepairPacket repair;
  repair.conversation = config_.conversation;
  repair.group = next_group_++;
  repair.m = static_cast<std::uint8_t>(m);
  for (const auto& p : group_) repair.sequences.push_back(load_u32_be(p.data() + 6));
  std::vector<std::byte> symbol(2 + longest);
  for (unsigned i = 0; i < m; ++i) {
    std::fill(symbol.begin(), symbol.end(), std::byte{0});
    for (unsigned j = 0; j < k; ++j) add_source(symbol, group_[j], gf256::cauchy(k, i, j));
    repair.index = static_cast<std::uint8_t>(i);
    repair.symbol = symbol;
    encode_repair(repair, packet_);
    transmit(packet_);
    stats_.repair_packets += 1;
    stats_.repair_bytes += packet_.size();
  }
  last_group_ = std::move(repair.sequences);
  stats_.groups += 1;
  stats_.k = k;
  stats_.m = m;
  group_.clear();
}

void FecEncoder::on_report(std::span<const std::byte> packet) {
  FecReport r;
  if (!decode_report(packet, r) || r.conversation != config_.conversation) {
    stats_.bad_packets += 1;
    return;
  }
  stats_.reports += 1;
  // Cumulative counts: a report overtaken by a newer one adds nothing.
  if (r.groups <= last_report_.groups || r.expected < last_report_.expected || r.lost < last_report_.lost) return;
  const double expected = r.expected - last_report_.expected;
  const double lost = r.lost - last_report_.lost;
  last_report_ = r;
  if (expected <= 0) return;
  // Weight by evidence: a report of a few packets moves the estimate a little.
  const double alpha = std::min(1.0, expected / 200.0);
  loss_ = (1 - alpha) * loss_ + alpha * std::min(1.0, lost / expected);
  stats_.loss_estimate = loss_;
}

// ---------------------------------------------------------------- decoder

FecDecoder::FecDecoder(const FecDecoderConfig& config) : config_(config) {
  stats_.totals.conversation = config.conversation;
}

void FecDecoder::remember(std::uint32_t sequence, std::span<const std::byte> packet, bool rebuilt) {
  if (cache_.contains(sequence)) return;
  cache_.emplace(sequence, Cached{std::vector<std::byte>(packet.begin(), packet.end()), rebuilt, !rebuilt});
  cache_order_.push_back(sequence);
  while (cache_order_.size() > config_.max_cached_packets) {
    cache_.erase(cache_order_.front());
    cache_order_.pop_front();
  }
}

void FecDecoder::on_data_packet(std::span<const std::byte> packet, std::uint32_t sequence, const Deliver& recovered) {
  if (const auto it = cache_.find(sequence); it != cache_.end()) {
    if (!it->second.original_arrived) stats_.originals_after_rebuild += 1;
    it->second.original_arrived = true;
    return;
  }
  remember(sequence, packet, false);
  for (std::size_t i = 0; i < pending_.size();) {
    const std::uint32_t id = pending_[i];
    Group& g = groups_.at(id);
    const bool listed = std::find(g.sequences.begin(), g.sequences.end(), sequence) != g.sequences.end();
    if (listed) try_rebuild(g, recovered);
    // try_rebuild takes a finished group off the list.
    if (i < pending_.size() && pending_[i] == id) ++i;
  }
}

void FecDecoder::on_repair(std::span<const std::byte> packet, const Deliver& recovered, const Transmit& transmit) {
  RepairPacket r;
  if (!decode_repair(packet, r) || r.conversation != config_.conversation) {
    stats_.bad_packets += 1;
    return;
  }
  auto it = groups_.find(r.group);
  if (it == groups_.end()) {
    while (groups_.size() >= config_.max_groups && !group_order_.empty()) forget_oldest(transmit);
    Group g;
    g.id = r.group;
    g.m = r.m;
    g.sequences = r.sequences;
    g.symbol_size = r.symbol.size();
    g.repairs.resize(r.m);
    it = groups_.emplace(r.group, std::move(g)).first;
    group_order_.push_back(r.group);
    pending_.push_back(r.group);
  } else if (it->second.m != r.m || it->second.sequences != r.sequences || it->second.symbol_size != r.symbol.size()) {
    stats_.bad_packets += 1;  // the same group described two ways: trust neither new word
    return;
  }
  Group& g = it->second;
  stats_.repairs_received += 1;
  if (!g.repairs[r.index].empty()) return;  // a duplicate
  g.repairs_arrived += 1;
  if (g.done) return;
  g.repairs[r.index].assign(r.symbol.begin(), r.symbol.end());
  try_rebuild(g, recovered);
}

void FecDecoder::try_rebuild(Group& g, const Deliver& recovered) {
  const unsigned k = static_cast<unsigned>(g.sequences.size());
  std::vector<unsigned> missing;
  for (unsigned j = 0; j < k; ++j)
    if (!cache_.contains(g.sequences[j])) missing.push_back(j);
  const auto finish = [&] {
    g.done = true;
    g.repairs.assign(g.repairs.size(), {});  // the symbols are no longer needed
    pending_.erase(std::remove(pending_.begin(), pending_.end(), g.id), pending_.end());
  };
  if (missing.empty()) return finish();
  if (missing.size() > g.repairs_arrived) return;

  std::vector<unsigned> rows;
  for (unsigned i = 0; i < g.repairs.size() && rows.size() < missing.size(); ++i)
    if (!g.repairs[i].empty()) rows.push_back(i);
  // Take the known packets out of each repair, leaving a square system in the missing ones.
  std::vector<std::vector<std::byte>> rhs;
  for (unsigned i : rows) {
    rhs.push_back(g.repairs[i]);
    for (unsigned j = 0; j < k; ++j) {
      if (std::find(missing.begin(), missing.end(), j) != missing.end()) continue;
      const auto& known = cache_.at(g.sequences[j]).packet;
      if (known.size() + 2 > g.symbol_size) {
        stats_.bad_packets += 1;  // not the packet the sender protected
        return finish();
      }
      add_source(rhs.back(), known, gf256::cauchy(k, i, j));
    }
  }
  std::vector<std::uint8_t> a(rows.size() * missing.size());
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t c = 0; c < missing.size(); ++c) a[r * missing.size() + c] = gf256::cauchy(k, rows[r], missing[c]);
  if (!gf256::solve(a, rhs)) return finish();
  for (std::size_t c = 0; c < missing.size(); ++c) {
    const std::size_t length = load_u16_be(rhs[c].data());
    const std::uint32_t sequence = g.sequences[missing[c]];
    Decoded d;
    d.error = PacketError::bad_length;
    if (length + 2 <= rhs[c].size()) d = decode(std::span(rhs[c]).subspan(2, length));
    if (d.error != PacketError::none || d.is_ack || d.data.sequence != sequence) {
      stats_.bad_packets += 1;  // a lying repair: the checksum of the rebuilt packet catches it
      continue;
    }
    const std::span<const std::byte> packet = std::span(rhs[c]).subspan(2, length);
    remember(sequence, packet, true);
    stats_.recovered += 1;
    recovered(packet);
  }
  finish();
}

void FecDecoder::forget_oldest(const Transmit& transmit) {
  const std::uint32_t id = group_order_.front();
  group_order_.pop_front();
  const auto it = groups_.find(id);
  if (it == groups_.end()) return;
  const Group& g = it->second;
  unsigned lost_data = 0;
  for (std::uint32_t s : g.sequences) {
    const auto c = cache_.find(s);
    lost_data += c == cache_.end() ? (g.done ? 0 : 1) : (c->second.original_arrived ? 0 : 1);
  }
  if (!g.done && lost_data > 0) stats_.groups_unrepairable += 1;
  stats_.totals.groups += 1;
  stats_.totals.expected += static_cast<std::uint32_t>(g.sequences.size() + g.m);
  stats_.totals.lost += lost_data + (g.m - g.repairs_arrived);
  pending_.erase(std::remove(pending_.begin(), pending_.end(), id), pending_.end());
  groups_.erase(it);
  if (++accounted_since_report_ >= config_.report_every) {
    accounted_since_report_ = 0;
    encode_report(stats_.totals, packet_);
    transmit(packet_);
    stats_.reports_sent += 1;
  }
}

}  // namespace volley::arq
