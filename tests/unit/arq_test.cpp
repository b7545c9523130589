// ARQ: packet format, RTO estimation, and the three schemes run through the
// netem model on a virtual clock (deterministic, and fast: no real waiting).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <volley/arq/receiver.hpp>
#include <volley/arq/sender.hpp>
#include <volley/netem/virtual_network.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/crc32c.hpp>

#include "bytes.hpp"

using namespace volley::arq;
using namespace std::chrono_literals;
using volley::test::hex;

TEST(ArqPacket, ByteExactDataAndAck) {
  const auto payload = volley::test::bytes_of("hi");
  std::vector<std::byte> out;
  encode_data({0x01020304, 0xFFFFFFFE, false, payload}, out);
  ASSERT_EQ(out.size(), kDataHeaderSize + 2);
  EXPECT_EQ(hex(std::span(out).first(12)), "01 02 03 04 01 00 ff ff ff fe 00 02");
  EXPECT_EQ(hex(std::span(out).subspan(16)), "68 69");
  const Decoded d = decode(out);
  ASSERT_EQ(d.error, PacketError::none);
  EXPECT_FALSE(d.is_ack);
  EXPECT_EQ(d.data.sequence, 0xFFFFFFFEu);
  EXPECT_EQ(d.data.payload.size(), 2u);

  AckPacket ack{7, 100, 32, {}};
  ack.set_sacked(102);
  ack.set_sacked(101 + 127);
  encode_ack(ack, out);
  ASSERT_EQ(out.size(), kAckSize);
  EXPECT_EQ(hex(std::span(out).first(12)), "00 00 00 07 02 00 00 00 00 64 00 20");
  const Decoded a = decode(out);
  ASSERT_EQ(a.error, PacketError::none);
  ASSERT_TRUE(a.is_ack);
  EXPECT_TRUE(a.ack.sacked(102));
  EXPECT_FALSE(a.ack.sacked(101));
  EXPECT_TRUE(a.ack.sacked(228));
  EXPECT_FALSE(a.ack.sacked(229));  // beyond the bitmap
}

TEST(ArqPacket, FullPacketsMatchAnIndependentCrc32c) {
  // The vectors of docs/PROTOCOL.md, checksums computed by a bitwise CRC-32C
  // written separately from the library's.
  std::vector<std::byte> out;
  encode_data({0x01020304, 0xFFFFFFFE, false, volley::test::bytes_of("hi")}, out);
  EXPECT_EQ(hex(out), "01 02 03 04 01 00 ff ff ff fe 00 02 51 f6 ab 9b 68 69");
  AckPacket ack{7, 100, 32, {}};
  ack.set_sacked(101);
  encode_ack(ack, out);
  EXPECT_EQ(hex(out),
            "00 00 00 07 02 00 00 00 00 64 00 20 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00 df 2e 72 0c");
}

TEST(ArqPacket, EverySingleBitFlipIsDetected) {
  std::vector<std::byte> data, ack;
  encode_data({9, 12345, true, volley::test::bytes_of("payload bytes")}, data);
  encode_ack({9, 77, 10, {0xF0F0, 1}}, ack);
  for (auto* packet : {&data, &ack}) {
    for (std::size_t i = 0; i < packet->size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        auto copy = *packet;
        copy[i] ^= static_cast<std::byte>(1 << bit);
        EXPECT_NE(decode(copy).error, PacketError::none) << i << ":" << bit;
      }
    }
    EXPECT_EQ(decode(std::span(*packet).first(packet->size() - 1)).error == PacketError::none, false);
  }
  EXPECT_EQ(decode(std::vector<std::byte>(5)).error, PacketError::too_short);
}

// Found by the ARQ packet fuzzer: a data packet with flag bits besides end of
// stream (and a matching checksum) decoded, though the encoder can never write
// it. Unknown flags are now a reason to discard, on acks too.
TEST(ArqPacket, UndefinedFlagBitsAreRejected) {
  std::vector<std::byte> packet;
  const std::string hi = "hi";
  for (const std::uint8_t flags : {0x02, 0x03, 0x80}) {
    encode_data({7, 1, false, std::as_bytes(std::span(hi))}, packet);
    packet[5] = std::byte{flags};
    std::array<std::byte, 4> zero{};
    std::vector<std::byte> for_crc = packet;
    std::copy(zero.begin(), zero.end(), for_crc.begin() + 12);
    volley::wire::store_u32_be(packet.data() + 12, volley::wire::crc32c(for_crc));
    EXPECT_EQ(decode(packet).error, PacketError::bad_flags) << int(flags);
  }
  encode_ack({7, 5, 32, {}}, packet);
  packet[5] = std::byte{0x01};
  std::vector<std::byte> for_crc = packet;
  std::fill(for_crc.begin() + 28, for_crc.end(), std::byte{0});
  volley::wire::store_u32_be(packet.data() + 28, volley::wire::crc32c(for_crc));
  EXPECT_EQ(decode(packet).error, PacketError::bad_flags);
  encode_data({7, 1, true, {}}, packet);
  EXPECT_EQ(decode(packet).error, PacketError::none);  // end of stream is defined
}

TEST(ArqPacket, ThePeekSaysWhatTheTypeByteSaysAndNothingElse) {
  std::vector<std::byte> out;
  encode_data({1, 2, false, volley::test::bytes_of("x")}, out);
  EXPECT_EQ(peek_type(out), PacketType::data);
  encode_ack({1, 2, 3, {}}, out);
  EXPECT_EQ(peek_type(out), PacketType::ack);
  out[12] ^= std::byte{0xff};  // corrupt: still an ack by its type byte, which decode() then refuses
  EXPECT_EQ(peek_type(out), PacketType::ack);
  EXPECT_EQ(decode(out).error, PacketError::bad_checksum);
  EXPECT_EQ(peek_type(std::span(out).first(kTypeAt)), std::nullopt);  // too short to say
  for (const int type : {0, 5, 0x7f, 0xff}) {
    out[kTypeAt] = static_cast<std::byte>(type);
    EXPECT_EQ(peek_type(out), std::nullopt) << type;
  }
}

TEST(ArqPacket, SequenceComparisonWrapsAround) {
  EXPECT_TRUE(seq_before(1, 2));
  EXPECT_FALSE(seq_before(2, 1));
  EXPECT_FALSE(seq_before(5, 5));
  EXPECT_TRUE(seq_before(0xFFFFFFFF, 0));
  EXPECT_TRUE(seq_before(0xFFFFFF00, 0x10));
  EXPECT_FALSE(seq_before(0x10, 0xFFFFFF00));
}

TEST(ArqRto, FollowsRfc6298) {
  RtoEstimator rto({300ms, 20ms, 2s, 1ms, 0ns});
  EXPECT_EQ(rto.rto(), 300ms);  // before any sample
  rto.sample(100ms);
  EXPECT_EQ(rto.srtt(), 100ms);
  EXPECT_EQ(rto.rttvar(), 50ms);
  EXPECT_EQ(rto.rto(), 300ms);  // 100 + 4 * 50
  rto.sample(100ms);
  EXPECT_EQ(rto.srtt(), 100ms);
  EXPECT_EQ(rto.rttvar(), 37'500us);  // 3/4 * 50 + 1/4 * 0
  EXPECT_EQ(rto.rto(), 250ms);
  rto.backoff();
  EXPECT_EQ(rto.rto(), 500ms);
  rto.backoff();
  rto.backoff();
  rto.backoff();
  EXPECT_EQ(rto.rto(), 2s);  // capped
  rto.clear_backoff();  // progress without a sample: back to SRTT + 4 RTTVAR
  EXPECT_EQ(rto.rto(), 250ms);
  rto.backoff();
  rto.sample(100ms);  // a fresh sample ends the backoff too
  EXPECT_LT(rto.rto(), 300ms);
  for (int i = 0; i < 50; ++i) rto.sample(1ms);
  EXPECT_EQ(rto.rto(), 20ms);  // the floor
  RtoEstimator fixed({300ms, 20ms, 2s, 1ms, 75ms});
  fixed.sample(5ms);
  fixed.backoff();
  EXPECT_EQ(fixed.rto(), 75ms);  // the seed's fixed timeout, for comparison runs
}

namespace {

std::vector<std::byte> message_for(std::uint64_t id) {
  std::vector<std::byte> m(8 + id % 120);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<std::byte>(i < 8 ? id >> (8 * i) : id * 31 + i);
  return m;
}

struct SimResult {
  bool finished = false;
  bool sender_failed = false;
  std::error_code error;
  std::uint64_t delivered = 0;
  bool exact = true;  // every message in order, once, intact
  std::uint64_t sent_hash = 1469598103934665603ull, received_hash = 1469598103934665603ull;
  SenderStats sender;
  ReceiverStats receiver;
  Nanos elapsed{0};
};

void mix(std::uint64_t& h, std::span<const std::byte> bytes) {
  for (std::byte b : bytes) h = (h ^ std::to_integer<std::uint64_t>(b)) * 1099511628211ull;
}

struct SimOptions {
  Scheme scheme = Scheme::selective_repeat;
  std::string forward = "delay 10ms";
  std::string backward = "delay 10ms";
  std::uint64_t messages = 10'000;
  std::uint32_t window = 32;
  std::uint32_t initial_sequence = 0;
  std::size_t receive_buffer = 4096;
  std::uint64_t seed = 1;
  std::uint32_t dead_after = 15;
  Nanos read_pause_until{0};  // the application reads nothing before this
  Nanos limit{std::chrono::hours(24)};
};

SimResult simulate(const SimOptions& o) {
  std::string error;
  const auto fwd_imp = volley::netem::parse_impairment(o.forward, error);
  const auto back_imp = volley::netem::parse_impairment(o.backward, error);
  EXPECT_TRUE(fwd_imp && back_imp) << error;
  volley::netem::VirtualNetwork net(*fwd_imp, *back_imp, o.seed);

  SenderConfig sc;
  sc.scheme = o.scheme;
  sc.window = o.window;
  sc.initial_sequence = o.initial_sequence;
  sc.send_buffer = 256;
  sc.dead_after = o.dead_after;
  ReceiverConfig rc;
  rc.scheme = o.scheme;
  rc.window = o.window;
  rc.initial_sequence = o.initial_sequence;
  rc.receive_buffer = o.receive_buffer;
  ArqSender sender(sc);
  ArqReceiver receiver(rc);

  SimResult r;
  std::uint64_t next_id = 0, expected_id = 0;
  auto to_forward = [&](std::span<const std::byte> p) { net.send_from_a(p); };
  auto to_backward = [&](std::span<const std::byte> p) { net.send_from_b(p); };
  std::vector<std::byte> got;
  while (net.now() < o.limit) {
    const Nanos now = net.now();
    while (next_id < o.messages) {
      const auto m = message_for(next_id);
      if (!sender.send(m)) break;
      mix(r.sent_hash, m);
      ++next_id;
    }
    if (next_id == o.messages) sender.close();
    sender.poll(now, to_forward);
    net.deliver_to_b([&](std::span<const std::byte> p) { receiver.on_packet(p, now, to_backward); });
    net.deliver_to_a([&](std::span<const std::byte> p) { sender.on_packet(p, now); });
    if (now >= o.read_pause_until) {
      while (receiver.receive(got)) {
        mix(r.received_hash, got);
        if (got != message_for(expected_id)) r.exact = false;
        ++expected_id;
      }
    }
    receiver.poll(now, to_backward);
    sender.poll(now, to_forward);
    if (receiver.finished() && sender.finished()) {
      r.finished = true;
      break;
    }
    if (sender.failed()) {
      r.sender_failed = true;
      r.error = sender.error();
      break;
    }
    // Jump to the next thing that can happen (nothing: it never will).
    const std::optional<Nanos> read_again =
        now < o.read_pause_until ? std::optional(o.read_pause_until) : std::nullopt;
    if (!net.advance({sender.next_timeout(), read_again})) break;
  }
  r.delivered = expected_id;
  r.sender = sender.stats();
  r.receiver = receiver.stats();
  r.elapsed = net.now();
  return r;
}

struct Setting {
  std::string name;
  std::string forward;
  std::string backward;
};

const std::vector<Setting> kSettings{
    {"clean", "delay 10ms", "delay 10ms"},
    {"loss5", "delay 10ms loss 5%", "delay 10ms loss 5%"},
    {"loss30", "delay 10ms loss 30%", "delay 10ms loss 30%"},
    {"burst", "delay 10ms loss gemodel 3% 25%", "delay 10ms loss gemodel 3% 25%"},
    {"reorder", "delay 10ms 4ms distribution normal", "delay 10ms 4ms distribution normal"},
    {"duplicate", "delay 10ms duplicate 20%", "delay 10ms duplicate 20%"},
    {"corrupt", "delay 10ms corrupt 10%", "delay 10ms corrupt 10%"},
    {"everything", "delay 10ms 3ms loss 10% duplicate 5% corrupt 5% reorder 10% gap 3",
     "delay 10ms 3ms loss 10% duplicate 5% corrupt 5%"},
};

}  // namespace

class ArqSimulation : public ::testing::TestWithParam<Scheme> {};

// Each scheme moves over a million packets across the settings, and every
// setting must deliver exactly the sent stream. Long silences are likely in the
// burst and 30% settings, so the dead-peer limit is out of the way here (it has
// its own test). Virtual time is free: go-back-N under reordering spends days of
// it, as theory says it must (every reordered packet is a loss to it, and with
// everything retransmitted Karn's rule leaves the RTO at its cap).
TEST_P(ArqSimulation, EverySettingDeliversExactlyTheSentStream) {
  const Scheme scheme = GetParam();
  std::uint64_t packets = 0;
  for (const Setting& setting : kSettings) {
    SimOptions o;
    o.scheme = scheme;
    o.forward = setting.forward;
    o.backward = setting.backward;
    o.messages = scheme == Scheme::go_back_n ? 40'000 : 130'000;
    o.window = scheme == Scheme::go_back_n ? 16 : 64;
    o.dead_after = 1'000'000;
    o.limit = std::chrono::hours(24 * 365);
    o.seed = packets + 1;
    const SimResult r = simulate(o);
    ASSERT_TRUE(r.finished) << setting.name << ": " << r.error << " after " << r.delivered;
    EXPECT_EQ(r.delivered, o.messages) << setting.name;
    EXPECT_TRUE(r.exact) << setting.name;
    EXPECT_EQ(r.received_hash, r.sent_hash) << setting.name;
    packets += r.sender.packets_sent + r.sender.retransmissions;
  }
  EXPECT_GE(packets, 1'000'000u);
  RecordProperty("packets", std::to_string(packets));
}

INSTANTIATE_TEST_SUITE_P(AllSchemes, ArqSimulation,
                         ::testing::Values(Scheme::stop_and_wait, Scheme::go_back_n, Scheme::selective_repeat),
                         [](const auto& info) {
                           std::string name = to_string(info.param);
                           std::erase(name, '-');
                           return name;
                         });

TEST(ArqBehaviour, SequenceNumbersWrapWithoutHarm) {
  for (Scheme s : {Scheme::stop_and_wait, Scheme::go_back_n, Scheme::selective_repeat}) {
    SimOptions o;
    o.scheme = s;
    o.forward = o.backward = "delay 5ms loss 5%";
    o.initial_sequence = 0xFFFFFF00u;  // wraps after 256 packets
    o.messages = 3000;
    const SimResult r = simulate(o);
    ASSERT_TRUE(r.finished) << to_string(s);
    EXPECT_TRUE(r.exact);
    EXPECT_EQ(r.delivered, 3000u);
  }
}

TEST(ArqBehaviour, AVanishedPeerIsReportedAfterTheDeadPeerLimit) {
  SimOptions o;
  o.forward = "delay 5ms down";
  o.messages = 100;
  const SimResult r = simulate(o);
  EXPECT_FALSE(r.finished);
  ASSERT_TRUE(r.sender_failed);
  EXPECT_EQ(r.error, volley::arq::Errc::peer_unreachable) << r.error.message();
  EXPECT_EQ(r.sender.timeouts, 16u);  // dead_after (15) in a row, then one more
  // 300 ms doubling to the 10 s cap: 0.3 + 0.6 + ... + 9.6, then 10 s ten times.
  EXPECT_EQ(r.elapsed, 118'900ms);
}

TEST(ArqBehaviour, SelectiveRepeatResendsOnlyWhatIsMissing) {
  SimOptions o;
  o.forward = "delay 10ms loss 5%";
  o.backward = "delay 10ms";
  o.messages = 50'000;
  o.scheme = Scheme::selective_repeat;
  const SimResult sr = simulate(o);
  o.scheme = Scheme::go_back_n;
  const SimResult gbn = simulate(o);
  ASSERT_TRUE(sr.finished && gbn.finished);
  const double lost = 0.05 * static_cast<double>(sr.sender.packets_sent);
  EXPECT_LT(static_cast<double>(sr.sender.retransmissions), 1.3 * lost);  // about one resend per loss
  EXPECT_GT(sr.sender.fast_retransmits, sr.sender.retransmissions / 2);  // holes found by selective acks
  EXPECT_GT(gbn.sender.retransmissions, 5 * sr.sender.retransmissions);  // go-back-N really goes back
  EXPECT_LT(sr.elapsed, gbn.elapsed);
}

TEST(ArqBehaviour, ASlowReaderThrottlesTheSenderWithoutLoss) {
  SimOptions o;
  o.forward = o.backward = "delay 5ms";
  o.messages = 2000;
  o.receive_buffer = 50;
  o.read_pause_until = 10s;  // the application reads nothing for 10 s
  const SimResult r = simulate(o);
  ASSERT_TRUE(r.finished) << r.error.message();
  EXPECT_TRUE(r.exact);
  EXPECT_GT(r.elapsed, 10s);
  // While the window was closed the sender probed one packet at a time, never
  // flooding: few packets were refused for lack of room.
  EXPECT_LT(r.receiver.outside_window, 200u);
}


TEST(ArqBehaviour, GoBackNKeepsItsTimeoutShortOnALossyLink) {
  // Nearly every window loses a packet, a timeout resends everything, and so
  // Karn's rule finds no sample to take: unless progress ends the backoff, the
  // RTO climbs to its cap and every loss costs 10 s.
  SimOptions o;
  o.scheme = Scheme::go_back_n;
  o.forward = o.backward = "delay 10ms loss 10%";
  o.window = 16;
  o.messages = 5000;
  const SimResult r = simulate(o);
  ASSERT_TRUE(r.finished);
  EXPECT_TRUE(r.exact);
  RecordProperty("virtual_seconds", std::to_string(r.elapsed.count() / 1'000'000'000));
  EXPECT_LT(r.elapsed, 5min);  // about 1.5 min; with the RTO stuck at its cap it took hours
}
