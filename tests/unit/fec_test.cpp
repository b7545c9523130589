// FEC under ARQ: the repair and report formats, the erasure code (any k of a
// group's k + m packets rebuild it), the time bound, the adaptive repair count,
// bounded memory, and the whole endpoint through the netem model on a virtual
// clock (deterministic: no wall-clock time is measured).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include <volley/arq/endpoint.hpp>
#include <volley/arq/fec.hpp>
#include <volley/arq/packet.hpp>
#include <volley/wire/crc32c.hpp>

#include "arq_sim.hpp"
#include "bytes.hpp"

using namespace volley::arq;
using namespace std::chrono_literals;
namespace {

// Hex without the spaces between bytes.
std::string hex_digits(std::span<const std::byte> bytes) {
  std::string h = volley::test::hex(bytes);
  h.erase(std::remove(h.begin(), h.end(), ' '), h.end());
  return h;
}

using Bytes = std::vector<std::byte>;

// A valid ARQ data packet of `length` payload bytes.
Bytes data_packet(std::uint32_t sequence, std::size_t length) {
  Bytes payload(length);
  for (std::size_t i = 0; i < length; ++i) payload[i] = static_cast<std::byte>(sequence * 131 + i * 7);
  Bytes out;
  encode_data({1, sequence, false, payload}, out);
  return out;
}

struct Captured {
  std::vector<Bytes> packets;
  FecEncoder::Transmit sink() {
    return [this](std::span<const std::byte> p) { packets.emplace_back(p.begin(), p.end()); };
  }
};

// Encodes one group of k data packets of varied lengths; returns data and repairs.
void encode_group(unsigned k, unsigned m, std::uint32_t first, std::vector<Bytes>& data, std::vector<Bytes>& repairs) {
  FecConfig c;
  c.k = k;
  c.m = m;
  FecEncoder encoder(c);
  Captured out;
  data.clear();
  for (unsigned j = 0; j < k; ++j) {
    data.push_back(data_packet(first + j, 1 + (j * 37) % 300));
    encoder.on_data_sent(data.back(), Nanos(j), out.sink());
  }
  repairs = out.packets;
}

}  // namespace

TEST(FecPacket, RepairAndReportAreByteExact) {
  const Bytes symbol{std::byte{0xAA}, std::byte{0xBB}, std::byte{0xCC}};
  RepairPacket r;
  r.conversation = 0x01020304;
  r.group = 0x0A0B0C0D;
  r.m = 2;
  r.index = 1;
  r.sequences = {0x11111111, 0x22222222};
  r.symbol = symbol;
  Bytes out;
  encode_repair(r, out);
  ASSERT_EQ(out.size(), kRepairHeaderSize + 8 + 3);
  // conversation, type 3, flags, group, k=2, m=2, index=1, 0, symbol length 3, crc, sequences, symbol
  EXPECT_EQ(hex_digits(std::span(out).first(16)), "01020304" "03" "00" "0a0b0c0d" "02" "02" "01" "00" "0003");
  EXPECT_EQ(hex_digits(std::span(out).subspan(20)), "11111111" "22222222" "aabbcc");
  Bytes zeroed = out;
  std::fill(zeroed.begin() + 16, zeroed.begin() + 20, std::byte{0});
  const std::uint32_t crc = volley::wire::crc32c_portable(zeroed);
  EXPECT_EQ(hex_digits(std::span(out).subspan(16, 4)),
            hex_digits(Bytes{std::byte(crc >> 24), std::byte(crc >> 16), std::byte(crc >> 8), std::byte(crc)}));
  RepairPacket back;
  ASSERT_TRUE(decode_repair(out, back));
  EXPECT_EQ(back.group, r.group);
  EXPECT_EQ(back.sequences, r.sequences);
  EXPECT_EQ(back.m, 2);
  EXPECT_EQ(back.index, 1);
  EXPECT_EQ(hex_digits(back.symbol), "aabbcc");

  Bytes report;
  encode_report({0x01020304, 5, 25, 3}, report);
  ASSERT_EQ(report.size(), kReportSize);
  EXPECT_EQ(hex_digits(std::span(report).first(18)), "01020304" "04" "00" "00000005" "00000019" "00000003");
  FecReport rb;
  ASSERT_TRUE(decode_report(report, rb));
  EXPECT_EQ(rb.expected, 25u);
  EXPECT_EQ(rb.lost, 3u);
  EXPECT_EQ(peek_type(out), PacketType::repair);
  EXPECT_EQ(peek_type(report), PacketType::report);
}

// The bytes docs/PROTOCOL.md shows, computed by an independent implementation
// (bit-serial CRC-32C and GF(2^8) arithmetic in Python): a group of two data
// packets ("hi" and "yo!", conversation 1, sequences 0 and 1) and its repair.
TEST(FecPacket, RepairMatchesAnIndependentImplementation) {
  const std::string hi = "hi", yo = "yo!";
  Bytes first, second;
  encode_data({1, 0, false, std::as_bytes(std::span(hi))}, first);
  encode_data({1, 1, false, std::as_bytes(std::span(yo))}, second);
  FecConfig c;
  c.k = 2;
  c.m = 1;
  FecEncoder encoder(c);
  Captured out;
  encoder.on_data_sent(first, Nanos(0), out.sink());
  encoder.on_data_sent(second, Nanos(0), out.sink());
  ASSERT_EQ(out.packets.size(), 1u);
  EXPECT_EQ(hex_digits(out.packets[0]),
            "00000001" "03" "00" "00000000" "02" "01" "00" "00" "0015" "387717d8" "00000000" "00000001"
            "00f30000007a7a00000000f400002d4a1093e89f1f");
  Bytes report;
  encode_report({1, 8, 40, 3}, report);
  EXPECT_EQ(hex_digits(report), "00000001" "04" "00" "00000008" "00000028" "00000003" "2fc5e26a");
}

TEST(FecPacket, EverySingleBitFlipAndBadFieldIsRejected) {
  std::vector<Bytes> data, repairs;
  encode_group(3, 2, 40, data, repairs);
  RepairPacket ignored;
  for (std::size_t bit = 0; bit < repairs[0].size() * 8; ++bit) {
    Bytes flipped = repairs[0];
    flipped[bit / 8] ^= std::byte{static_cast<unsigned char>(1u << (bit % 8))};
    EXPECT_FALSE(decode_repair(flipped, ignored)) << "bit " << bit;
  }
  Bytes truncated(repairs[0].begin(), repairs[0].end() - 1);
  EXPECT_FALSE(decode_repair(truncated, ignored));
  EXPECT_FALSE(decode_repair(std::span(repairs[0]).first(10), ignored));
  Bytes report;
  encode_report({1, 1, 5, 6}, report);  // more lost than expected: a lie
  FecReport r;
  EXPECT_FALSE(decode_report(report, r));
}

TEST(FecParse, KMAndAdaptive) {
  FecConfig c;
  std::string error;
  ASSERT_TRUE(parse_fec("4:1", c, error));
  EXPECT_EQ(c.k, 4u);
  EXPECT_EQ(c.m, 1u);
  EXPECT_FALSE(c.adaptive);
  ASSERT_TRUE(parse_fec("adaptive", c, error));
  EXPECT_TRUE(c.adaptive);
  for (const char* bad : {"", "4", "4:", ":1", "0:1", "4:0", "65:1", "4:17", "4:1x", "-1:2", "a:b"}) {
    EXPECT_FALSE(parse_fec(bad, c, error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

// Every erasure pattern of up to m packets among the k + m: the missing data
// packets come back byte for byte, whether the repairs arrive before or after the data.
TEST(FecCode, AnyKOfTheGroupsPacketsRebuildIt) {
  const std::vector<std::pair<unsigned, unsigned>> shapes{{1, 1}, {2, 1}, {4, 1}, {4, 2}, {3, 3}, {8, 3}, {5, 4}, {16, 2}};
  for (const auto& [k, m] : shapes) {
    std::vector<Bytes> data, repairs;
    encode_group(k, m, 1000, data, repairs);
    ASSERT_EQ(repairs.size(), m);
    const unsigned n = k + m;
    for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
      if (static_cast<unsigned>(std::popcount(mask)) > m) continue;
      for (const bool repairs_first : {false, true}) {
        FecDecoder decoder(FecDecoderConfig{});
        std::map<std::uint32_t, Bytes> rebuilt;
        const auto deliver = [&](std::span<const std::byte> p) {
          const Decoded d = decode(p);
          ASSERT_EQ(d.error, PacketError::none);
          rebuilt[d.data.sequence] = Bytes(p.begin(), p.end());
        };
        const auto feed_data = [&] {
          for (unsigned j = 0; j < k; ++j)
            if (!(mask & (1u << j))) decoder.on_data_packet(data[j], 1000 + j, deliver);
        };
        const auto feed_repairs = [&] {
          for (unsigned i = 0; i < m; ++i)
            if (!(mask & (1u << (k + i)))) decoder.on_repair(repairs[i], deliver, [](std::span<const std::byte>) {});
        };
        if (repairs_first) {
          feed_repairs();
          feed_data();
        } else {
          feed_data();
          feed_repairs();
        }
        unsigned lost_data = 0;
        for (unsigned j = 0; j < k; ++j) {
          if (!(mask & (1u << j))) continue;
          ++lost_data;
          ASSERT_TRUE(rebuilt.contains(1000 + j)) << "k=" << k << " m=" << m << " mask=" << mask;
        }
        // Repairs that come first rebuild the last data packets before they
        // arrive (as overtaken packets on a jittery link are): never wrongly.
        for (const auto& [sequence, packet] : rebuilt) EXPECT_EQ(packet, data[sequence - 1000]);
        if (!repairs_first) {
          EXPECT_EQ(rebuilt.size(), lost_data);
        }
        EXPECT_EQ(decoder.stats().bad_packets, 0u);
      }
    }
  }
}

TEST(FecCode, MoreLossesThanRepairsRebuildNothingAndAreReported) {
  FecDecoderConfig config;
  config.max_groups = 2;
  config.report_every = 1;
  FecDecoder decoder(config);
  Captured reports;
  unsigned delivered = 0;
  const auto deliver = [&](std::span<const std::byte>) { ++delivered; };
  FecConfig c;
  c.k = 4;
  c.m = 1;
  FecEncoder encoder(c);
  Captured repairs;
  std::vector<Bytes> data;
  for (std::uint32_t s = 0; s < 4; ++s) {
    data.push_back(data_packet(s, 10 + s));
    encoder.on_data_sent(data.back(), Nanos(0), repairs.sink());
  }
  decoder.on_data_packet(data[0], 0, deliver);
  decoder.on_data_packet(data[3], 3, deliver);
  ASSERT_EQ(repairs.packets.size(), 1u);
  decoder.on_repair(repairs.packets[0], deliver, reports.sink());
  EXPECT_EQ(delivered, 0u);
  // Two newer groups push the first one out: it is accounted and reported.
  repairs.packets.clear();
  for (std::uint32_t s = 4; s < 12; ++s) encoder.on_data_sent(data_packet(s, 10), Nanos(0), repairs.sink());
  for (const auto& p : repairs.packets) decoder.on_repair(p, deliver, reports.sink());
  EXPECT_EQ(decoder.stats().groups_unrepairable, 1u);
  ASSERT_EQ(reports.packets.size(), 1u);
  FecReport r;
  ASSERT_TRUE(decode_report(reports.packets[0], r));
  EXPECT_EQ(r.groups, 1u);
  EXPECT_EQ(r.expected, 5u);
  EXPECT_EQ(r.lost, 2u);
}

TEST(FecCode, ALyingOrInconsistentRepairRebuildsNothing) {
  std::vector<Bytes> data, repairs;
  encode_group(2, 1, 7, data, repairs);
  RepairPacket lie;
  ASSERT_TRUE(decode_repair(repairs[0], lie));
  Bytes symbol(lie.symbol.begin(), lie.symbol.end());
  for (auto& b : symbol) b ^= std::byte{0x5C};
  lie.symbol = symbol;
  Bytes forged;
  encode_repair(lie, forged);  // a valid checksum over a wrong symbol
  FecDecoder decoder(FecDecoderConfig{});
  unsigned delivered = 0;
  const auto deliver = [&](std::span<const std::byte>) { ++delivered; };
  decoder.on_data_packet(data[0], 7, deliver);
  decoder.on_repair(forged, deliver, [](std::span<const std::byte>) {});
  EXPECT_EQ(delivered, 0u);  // the rebuilt packet fails its own checksum
  EXPECT_EQ(decoder.stats().bad_packets, 1u);

  // The same group described with other sequences: ignored.
  FecDecoder second(FecDecoderConfig{});
  second.on_repair(repairs[0], deliver, [](std::span<const std::byte>) {});
  RepairPacket other;
  ASSERT_TRUE(decode_repair(repairs[0], other));
  other.sequences[0] += 100;
  Bytes inconsistent;
  encode_repair(other, inconsistent);
  second.on_repair(inconsistent, deliver, [](std::span<const std::byte>) {});
  EXPECT_EQ(second.stats().bad_packets, 1u);
}

TEST(FecEncoderTiming, AGroupClosesWhenItsFirstPacketIsMaxGroupDelayOld) {
  FecConfig c;
  c.k = 8;
  c.m = 1;
  c.max_group_delay = 100ms;
  FecEncoder encoder(c);
  Captured out;
  EXPECT_FALSE(encoder.next_timeout());
  for (int i = 0; i < 3; ++i) encoder.on_data_sent(data_packet(i, 50), Nanos(i * 10ms), out.sink());
  ASSERT_TRUE(encoder.next_timeout());
  EXPECT_EQ(*encoder.next_timeout(), Nanos(100ms));
  encoder.poll(99ms, out.sink());
  EXPECT_TRUE(out.packets.empty());
  encoder.poll(100ms, out.sink());
  ASSERT_EQ(out.packets.size(), 1u);
  RepairPacket r;
  ASSERT_TRUE(decode_repair(out.packets[0], r));
  EXPECT_EQ(r.sequences, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(encoder.last_group(), r.sequences);
  EXPECT_FALSE(encoder.next_timeout());
}

TEST(FecEncoderAdaptive, GroupSizeFollowsTheRateAndRepairsFollowTheReportedLoss) {
  FecConfig c;
  c.adaptive = true;
  c.max_group_delay = 100ms;
  FecEncoder encoder(c);
  Captured out;
  std::uint32_t seq = 0;
  Nanos now{0};
  const auto send_for = [&](Nanos span) {
    for (const Nanos end = now + span; now < end; now += 25ms) {
      encoder.on_data_sent(data_packet(seq++, 100), now, out.sink());
      encoder.poll(now, out.sink());
    }
  };
  send_for(2s);
  EXPECT_EQ(encoder.stats().k, 4u);  // 100 ms at one packet per 25 ms
  EXPECT_EQ(encoder.stats().m, 1u);  // 1% assumed: one repair leaves 0.1% of groups short

  Bytes report;
  encode_report({1, 100, 1000, 200}, report);  // 20% lost
  encoder.on_report(report);
  EXPECT_NEAR(encoder.stats().loss_estimate, 0.2, 1e-9);
  send_for(1s);
  EXPECT_EQ(encoder.stats().m, c.max_m);  // four repairs for four packets at 20%

  encode_report({1, 200, 2000, 200}, report);  // nothing lost since
  encoder.on_report(report);
  encode_report({1, 150, 1500, 200}, report);  // an older report arriving late changes nothing
  encoder.on_report(report);
  EXPECT_NEAR(encoder.stats().loss_estimate, 0.0, 1e-9);
  send_for(1s);
  EXPECT_EQ(encoder.stats().m, 1u);
}

TEST(FecDecoderMemory, GroupsAndPacketsStayBounded) {
  FecDecoderConfig config;
  config.max_groups = 16;
  config.max_cached_packets = 64;
  FecDecoder decoder(config);
  FecConfig c;
  c.k = 4;
  c.m = 2;
  FecEncoder encoder(c);
  Captured out;
  const auto deliver = [](std::span<const std::byte>) {};
  for (std::uint32_t s = 0; s < 20'000; ++s) {
    const Bytes p = data_packet(s, 64);
    out.packets.clear();
    encoder.on_data_sent(p, Nanos(0), out.sink());
    if (s % 3 != 0) decoder.on_data_packet(p, s, deliver);  // a third lost, so groups stay pending
    for (const auto& r : out.packets) decoder.on_repair(r, deliver, [](std::span<const std::byte>) {});
    ASSERT_LE(decoder.groups_held(), 16u);
    ASSERT_LE(decoder.packets_held(), 64u);
  }
  EXPECT_GT(decoder.stats().recovered, 1000u);
}

namespace {

volley::tools::ArqVariant variant(const std::string& text) {
  std::string error;
  const auto v = volley::tools::parse_arq_variant(text, error);
  EXPECT_TRUE(v) << error;
  return *v;
}

}  // namespace

// Every impairment the model has, 0 to 30% loss, FEC on both ends, one way and
// echoed: over a million packets, the stream arrives exactly (the simulation
// checks order, count and content: a wrongly rebuilt packet would show), and
// repairs rebuild losses. Corrupted repairs are among them: the checksum drops them.
TEST(FecSimulation, EverySettingDeliversExactlyWithRepairs) {
  const std::vector<std::string> settings{
      "delay 10ms",
      "delay 10ms loss 5%",
      "delay 10ms loss 15%",
      "delay 10ms loss 30%",
      "delay 10ms loss gemodel 3% 25%",
      "delay 10ms 4ms distribution normal",
      "delay 10ms duplicate 20%",
      "delay 10ms corrupt 10%",
      "delay 10ms 3ms loss 10% duplicate 5% corrupt 5% reorder 10% gap 3",
  };
  std::uint64_t packets = 0;
  for (const auto& netem : settings) {
    // Go-back-N is left out: under reordering it needs days of virtual time (arq_test.cpp says why).
    for (const char* v : {"sr+fec=4:1", "sr+fec=3:2", "sr+fec=adaptive", "sr+fec=16:4"}) {
      for (const bool echo : {false, true}) {
        const volley::tools::ArqScenario scenario{0, netem, 2, 4000, 200, echo, 1, ""};
        const auto r = volley::tools::simulate_arq(scenario, variant(v), {}, 3);
        packets += r.up.packets_in + r.down.packets_in;
        EXPECT_EQ(r.error, "") << netem << " " << v << " echo " << echo;
        EXPECT_EQ(r.records.size(), 4000u) << netem << " " << v;
        if (netem.find("loss") != std::string::npos) {
          EXPECT_GT(r.fec_decoder.recovered, 0u) << netem << " " << v;
        }
      }
    }
  }
  EXPECT_GT(packets, 1'000'000u);  // data, repairs, acks and reports, both ways
}

// The classic scenario 3 and the KCP-style round trip on the virtual clock:
// FEC repairs most losses without a round trip, so fewer retransmissions and a
// lower mean and p99 than selective repeat alone, for every seed.
TEST(FecSimulation, RepairsBeatRetransmissionOnTheLossyScenarios) {
  for (const int number : {3, 5}) {
    const auto* scenario = volley::tools::find_arq_scenario(number);
    ASSERT_NE(scenario, nullptr);
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      const auto plain = volley::tools::simulate_arq(*scenario, variant("sr"), {}, seed);
      const auto fec = volley::tools::simulate_arq(*scenario, variant("sr+fec=4:1"), {}, seed);
      ASSERT_EQ(plain.error, "");
      ASSERT_EQ(fec.error, "");
      const auto a = volley::tools::delay_stats(plain.records);
      const auto b = volley::tools::delay_stats(fec.records);
      EXPECT_LT(fec.sender.retransmissions, plain.sender.retransmissions) << number << " seed " << seed;
      EXPECT_LT(b.mean, a.mean) << number << " seed " << seed;
      EXPECT_LT(b.p99, a.p99) << number << " seed " << seed;
      EXPECT_GT(fec.fec_decoder.recovered, fec.fec_decoder.originals_after_rebuild);
    }
  }
}
