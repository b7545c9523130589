#pragma once
// Forward error correction under the ARQ data stream, sans-IO like the ARQ
// machines: time is passed in, packets come out through a callback.
//
// The data packets go on the wire unchanged. The encoder collects each one it
// is shown (first transmissions and resends alike) into a group; when the group
// holds k packets, or its first packet is `max_group_delay` old, it emits m
// repair packets computed with a systematic Reed-Solomon code over GF(2^8)
// (a Cauchy matrix), so that any k of the group's k+m packets rebuild all k.
// A lost packet is then repaired at the receiver without a round trip;
// what FEC cannot repair, the ARQ retransmission still does.
//
// The receiver keeps the data packets it saw (bounded) and, for each group it
// hears of, rebuilds what is missing as soon as enough repairs arrived. It
// reports the loss it measures (cumulative counts, so a lost report costs
// nothing), which the adaptive encoder turns into the repair count.
//
// Wire formats (docs/PROTOCOL.md), the CRC-32C as in the ARQ packets:
//   repair: [conversation u32][type 3 u8][flags 0 u8][group u32][k u8][m u8][index u8][0 u8]
//           [symbol length u16][crc32c u32][k x sequence u32][symbol]
//   report: [conversation u32][type 4 u8][flags 0 u8][groups u32][expected u32][lost u32][crc32c u32]
// Source symbol j of a group is [length u16][data packet j][zeros] padded to the
// symbol length (2 + the group's longest data packet); repair symbol i is
// sum_j C[i][j] * S_j with C[i][j] = 1 / ((k + i) xor j) in GF(2^8) (x^8+x^4+x^3+x^2+1).
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <volley/arq/rto.hpp>

namespace volley::arq {

inline constexpr std::size_t kRepairHeaderSize = 20;  // before the sequence list
inline constexpr std::size_t kReportSize = 22;
inline constexpr unsigned kMaxGroupData = 64;    // k
inline constexpr unsigned kMaxGroupRepair = 16;  // m

struct RepairPacket {
  std::uint32_t conversation = 0;
  std::uint32_t group = 0;
  std::uint8_t m = 0;      // repair packets in the group
  std::uint8_t index = 0;  // this one's row, 0..m-1
  std::vector<std::uint32_t> sequences;  // the k data packets it protects, in order
  std::span<const std::byte> symbol;
};

struct FecReport {
  std::uint32_t conversation = 0;
  std::uint32_t groups = 0;    // groups accounted so far
  std::uint32_t expected = 0;  // packets (data and repair) those groups had
  std::uint32_t lost = 0;      // of which never arrived
};

void encode_repair(const RepairPacket& packet, std::vector<std::byte>& out);
// False (nothing decoded) when the size, the checksum or a field is wrong.
bool decode_repair(std::span<const std::byte> bytes, RepairPacket& out);
void encode_report(const FecReport& report, std::vector<std::byte>& out);
bool decode_report(std::span<const std::byte> bytes, FecReport& out);

struct FecConfig {
  std::uint32_t conversation = 1;
  unsigned k = 4;  // data packets per group (fixed mode; the most in adaptive mode is max_k)
  unsigned m = 1;  // repair packets per group (fixed mode)
  // Adaptive: k is what the sender sends within max_group_delay (at most max_k);
  // m the least (1 to max_m) that leaves a group with more than m losses at most
  // `residual_target` likely, at the loss the receiver reports.
  bool adaptive = false;
  unsigned max_k = 16;
  unsigned max_m = 4;
  double residual_target = 0.01;
  double initial_loss = 0.01;  // what adaptive assumes before the first report
  Nanos max_group_delay{std::chrono::milliseconds(100)};
};

// Parses "K:M" or "adaptive" into `config`; the error says what is wrong.
bool parse_fec(const std::string& text, FecConfig& config, std::string& error);

struct FecEncoderStats {
  std::uint64_t groups = 0;
  std::uint64_t repair_packets = 0;
  std::uint64_t repair_bytes = 0;   // repair packets on the wire, headers included
  std::uint64_t reports = 0;
  std::uint64_t bad_packets = 0;
  unsigned k = 0, m = 0;            // of the last group
  double loss_estimate = 0;         // adaptive: the loss it sizes repairs for
};

class FecEncoder {
 public:
  using Transmit = std::function<void(std::span<const std::byte>)>;

  explicit FecEncoder(const FecConfig& config);

  // A data packet that was just put on the wire.
  void on_data_sent(std::span<const std::byte> packet, Nanos now, const Transmit& transmit);
  // A report packet from the receiver.
  void on_report(std::span<const std::byte> packet);
  // Closes a group whose time is up.
  void poll(Nanos now, const Transmit& transmit);
  std::optional<Nanos> next_timeout() const;

  const FecEncoderStats& stats() const noexcept { return stats_; }
  const FecConfig& config() const noexcept { return config_; }
  // The sequences the last repairs covered.
  const std::vector<std::uint32_t>& last_group() const noexcept { return last_group_; }

 private:
  void start_group(Nanos now);
  void close_group(const Transmit& transmit);
  unsigned repairs_for(unsigned k) const;

  FecConfig config_;
  std::uint32_t next_group_ = 0;
  std::vector<std::vector<std::byte>> group_;  // the current group's data packets
  unsigned group_k_ = 0;                       // the size it closes at
  Nanos group_started_{0};
  std::optional<Nanos> last_sent_;
  double gap_ns_ = 0;                          // smoothed time between data packets
  double loss_ = 0;
  FecReport last_report_{};
  std::vector<std::uint32_t> last_group_;
  std::vector<std::byte> packet_;
  FecEncoderStats stats_;
};

struct FecDecoderConfig {
  std::uint32_t conversation = 1;
  // Groups remembered: the oldest is accounted (and reported) when a newer
  // one would exceed this, so it is also how far behind the reports run.
  std::size_t max_groups = 32;
  std::size_t max_cached_packets = 4096;  // data packets kept to rebuild others
  unsigned report_every = 4;              // groups accounted between reports
};

struct FecDecoderStats {
  std::uint64_t repairs_received = 0;
  std::uint64_t recovered = 0;            // data packets rebuilt
  std::uint64_t originals_after_rebuild = 0;  // of those, the original came later (overtaken by the repair)
  std::uint64_t groups_unrepairable = 0;  // forgotten with more lost than repairs arrived
  std::uint64_t bad_packets = 0;          // corrupt, foreign or inconsistent repairs
  std::uint64_t reports_sent = 0;
  FecReport totals{};
};

class FecDecoder {
 public:
  using Deliver = std::function<void(std::span<const std::byte> data_packet)>;
  using Transmit = std::function<void(std::span<const std::byte>)>;

  explicit FecDecoder(const FecDecoderConfig& config);

  // A valid data packet of the conversation arrived (decoded by the caller).
  // Rebuilt packets go to `recovered`, each a valid data packet.
  void on_data_packet(std::span<const std::byte> packet, std::uint32_t sequence, const Deliver& recovered);
  // A repair packet arrived; reports go out through `transmit`.
  void on_repair(std::span<const std::byte> packet, const Deliver& recovered, const Transmit& transmit);

  const FecDecoderStats& stats() const noexcept { return stats_; }
  std::size_t groups_held() const noexcept { return groups_.size(); }
  std::size_t packets_held() const noexcept { return cache_.size(); }

 private:
  struct Group {
    std::uint32_t id = 0;
    std::uint8_t m = 0;
    std::vector<std::uint32_t> sequences;
    std::size_t symbol_size = 0;
    std::vector<std::vector<std::byte>> repairs;  // by index; empty: not arrived
    unsigned repairs_arrived = 0;
    bool done = false;
  };

  void remember(std::uint32_t sequence, std::span<const std::byte> packet, bool rebuilt);
  void try_rebuild(Group& group, const Deliver& recovered);
  void forget_oldest(const Transmit& transmit);

  FecDecoderConfig config_;
  struct Cached {
    std::vector<std::byte> packet;
    // Rebuilt before the original arrived (with jitter, repairs can overtake
    // the data): lost only if the original never comes.
    bool rebuilt = false;
    bool original_arrived = true;
  };
  std::unordered_map<std::uint32_t, Cached> cache_;  // sequence -> data packet
  std::deque<std::uint32_t> cache_order_;
  std::unordered_map<std::uint32_t, Group> groups_;
  std::deque<std::uint32_t> group_order_;
  std::vector<std::uint32_t> pending_;  // groups with something missing
  unsigned accounted_since_report_ = 0;
  std::vector<std::byte> packet_;
  FecDecoderStats stats_;
};

}  // namespace volley::arq
