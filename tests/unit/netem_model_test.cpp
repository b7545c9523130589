// Statistical and behavioural tests of the impairment model, with fixed seeds.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include <volley/netem/link_model.hpp>
#include <volley/netem/pcap_writer.hpp>
#include <volley/netem/virtual_network.hpp>

using namespace volley::netem;
using namespace std::chrono_literals;

namespace {

Impairment parse(const std::string& text) {
  std::string error;
  auto imp = parse_impairment(text, error);
  EXPECT_TRUE(imp) << text << ": " << error;
  return imp.value_or(Impairment{});
}

std::vector<std::byte> packet(std::size_t size, std::uint64_t id) {
  std::vector<std::byte> p(size);
  for (std::size_t i = 0; i < size; ++i) p[i] = static_cast<std::byte>((id >> (8 * (i % 8))) & 0xFF);
  return p;
}

// Sends `count` packets `spacing` apart and drains everything, in departure order.
std::vector<Departure> run(LinkModel& link, std::size_t count, Nanos spacing, std::size_t size = 100) {
  std::vector<Departure> out;
  Departure d;
  Nanos now{0};
  for (std::size_t i = 0; i < count; ++i) {
    now = Nanos(static_cast<std::int64_t>(i) * spacing.count());
    while (link.take_due(now, d)) out.push_back(std::move(d));
    link.submit(now, packet(size, i), i);
  }
  while (auto next = link.next_departure()) {
    while (link.take_due(*next, d)) out.push_back(std::move(d));
  }
  return out;
}

struct Stats {
  double mean = 0, sd = 0;
};
Stats delay_stats(const std::vector<Departure>& deps) {
  Stats s;
  for (const auto& d : deps) s.mean += static_cast<double>((d.departs - d.arrived).count());
  s.mean /= static_cast<double>(deps.size());
  for (const auto& d : deps) {
    const double x = static_cast<double>((d.departs - d.arrived).count()) - s.mean;
    s.sd += x * x;
  }
  s.sd = std::sqrt(s.sd / static_cast<double>(deps.size()));
  return s;
}

// Lengths of runs of consecutive lost packets (by tag), for burst statistics.
std::vector<std::size_t> loss_bursts(const std::vector<Departure>& deps, std::size_t sent) {
  std::vector<bool> got(sent, false);
  for (const auto& d : deps) got[d.tag] = true;
  std::vector<std::size_t> bursts;
  std::size_t run_length = 0;
  for (std::size_t i = 0; i < sent; ++i) {
    if (!got[i]) {
      ++run_length;
    } else if (run_length) {
      bursts.push_back(run_length);
      run_length = 0;
    }
  }
  if (run_length) bursts.push_back(run_length);
  return bursts;
}

}  // namespace

TEST(NetemModel, RandomLossRateWithinATenthOfAPoint) {
  for (const double percent : {1.0, 10.0, 30.0}) {
    LinkModel link(parse("loss random " + std::to_string(percent) + "%"), 11);
    const std::size_t n = 1'000'000;
    const auto deps = run(link, n, 1us);
    const double rate = 100.0 * static_cast<double>(n - deps.size()) / static_cast<double>(n);
    EXPECT_NEAR(rate, percent, 0.1) << percent;
    EXPECT_EQ(link.counters().lost, n - deps.size());
  }
}

TEST(NetemModel, GilbertElliottBurstsMatchTheory) {
  // Simple Gilbert (1-h = 100%, 1-k = 0): loss rate p/(p+r), mean burst 1/r.
  const double p = 0.01, r = 0.3;
  LinkModel link(parse("loss gemodel 1% 30%"), 5);
  const std::size_t n = 2'000'000;
  const auto deps = run(link, n, 1us, 10);
  const double rate = static_cast<double>(n - deps.size()) / static_cast<double>(n);
  const auto bursts = loss_bursts(deps, n);
  const double mean_burst = static_cast<double>(std::accumulate(bursts.begin(), bursts.end(), std::size_t{0})) /
                            static_cast<double>(bursts.size());
  EXPECT_NEAR(rate, p / (p + r), 0.05 * p / (p + r));
  EXPECT_NEAR(mean_burst, 1 / r, 0.05 / r);
}

TEST(NetemModel, GilbertElliottGeneralLossRate) {
  // Loss in both states: rate = pi_good (1-k) + pi_bad (1-h).
  const double p = 0.05, r = 0.4, one_minus_h = 0.7, one_minus_k = 0.02;
  LinkModel link(parse("loss gemodel 5% 40% 70% 2%"), 6);
  const std::size_t n = 1'000'000;
  const auto deps = run(link, n, 1us, 10);
  const double pi_bad = p / (p + r);
  const double theory = (1 - pi_bad) * one_minus_k + pi_bad * one_minus_h;
  const double rate = static_cast<double>(n - deps.size()) / static_cast<double>(n);
  EXPECT_NEAR(rate, theory, 0.05 * theory);
}

TEST(NetemModel, FourStateMarkovLossRateMatchesItsStationaryDistribution) {
  const double p13 = 0.02, p31 = 0.4, p32 = 0.3, p23 = 0.1, p14 = 0.01;
  LinkModel link(parse("loss state 2% 40% 30% 10% 1%"), 7);
  const std::size_t n = 1'000'000;
  const auto deps = run(link, n, 1us, 10);
  // Stationary distribution of the chain by power iteration.
  std::array<double, 4> pi{1, 0, 0, 0};
  for (int it = 0; it < 10000; ++it) {
    std::array<double, 4> next{};
    next[0] += pi[0] * (1 - p13 - p14) + pi[2] * p31 + pi[3];
    next[3] += pi[0] * p14;
    next[2] += pi[0] * p13 + pi[1] * p23 + pi[2] * (1 - p31 - p32);
    next[1] += pi[1] * (1 - p23) + pi[2] * p32;
    pi = next;
  }
  const double theory = pi[2] + pi[3];  // lost in a burst, or an isolated loss
  const double rate = static_cast<double>(n - deps.size()) / static_cast<double>(n);
  EXPECT_NEAR(rate, theory, 0.05 * theory);
}

TEST(NetemModel, DelayMeanAndJitterWithinTwoPercent) {
  struct Case {
    std::string text;
    double sd_ms;
  };
  for (const Case& c : {Case{"delay 50ms 10ms distribution normal", 10.0},
                        Case{"delay 50ms 10ms", 10.0 / std::sqrt(3.0)},
                        Case{"delay 80ms 10ms distribution pareto", 10.0},
                        Case{"delay 80ms 10ms distribution paretonormal", 10.0}}) {
    LinkModel link(parse(c.text), 3);
    const auto deps = run(link, 400'000, 100us);
    const Stats s = delay_stats(deps);
    const double mean_ms = s.mean / 1e6;
    const double expected_mean = c.text.find("80ms") != std::string::npos ? 80.0 : 50.0;
    EXPECT_NEAR(mean_ms, expected_mean, 0.02 * expected_mean) << c.text;
    EXPECT_NEAR(s.sd / 1e6, c.sd_ms, 0.02 * c.sd_ms) << c.text;
  }
}

TEST(NetemModel, JitterReordersUnlessOrderIsKept) {
  auto count_inversions = [](const std::vector<Departure>& deps) {
    std::size_t inversions = 0;
    for (std::size_t i = 1; i < deps.size(); ++i) inversions += deps[i].tag < deps[i - 1].tag;
    return inversions;
  };
  LinkModel jittery(parse("delay 50ms 10ms distribution normal"), 9);
  EXPECT_GT(count_inversions(run(jittery, 100'000, 1ms)), 1000u);
  LinkModel ordered(parse("delay 50ms 10ms distribution normal keep-order"), 9);
  const auto deps = run(ordered, 100'000, 1ms);
  EXPECT_EQ(count_inversions(deps), 0u);
  EXPECT_EQ(deps.size(), 100'000u);
}

TEST(NetemModel, RateLimitHoldsAndTheQueueTailDrops) {
  // 10 Mbit/s with 1000-byte packets: one every 800 us. Offered at twice that.
  LinkModel link(parse("rate 10mbit limit 100000"), 1);
  const auto deps = run(link, 100'000, 400us, 1000);
  ASSERT_EQ(deps.size(), 100'000u);
  const double seconds = static_cast<double>((deps.back().departs - deps.front().departs).count()) / 1e9;
  const double bits_per_s = static_cast<double>((deps.size() - 1) * 1000 * 8) / seconds;
  EXPECT_NEAR(bits_per_s, 10e6, 0.02 * 10e6);
  for (std::size_t i = 1; i < deps.size(); ++i) ASSERT_GT(deps[i].tag, deps[i - 1].tag);

  LinkModel small(parse("rate 10mbit limit 50"), 1);
  const auto kept = run(small, 10'000, 400us, 1000);
  EXPECT_GT(small.counters().queue_full, 4000u);
  EXPECT_EQ(kept.size() + small.counters().queue_full, 10'000u);

  LinkModel overhead(parse("rate 1mbit 20 100 4"), 1);  // 1000 B + 20 -> 11 cells of 104 B
  const auto two = run(overhead, 2, 0us, 1000);
  EXPECT_EQ((two[1].departs - two[0].departs).count(), 11 * 104 * 8 * 1000);
}

TEST(NetemModel, DuplicateCorruptAndReorder) {
  LinkModel dup(parse("duplicate 5%"), 2);
  const auto d = run(dup, 200'000, 1us);
  EXPECT_NEAR(static_cast<double>(d.size() - 200'000) / 200'000, 0.05, 0.003);
  EXPECT_EQ(dup.counters().duplicated, d.size() - 200'000);
  std::map<std::uint64_t, int> copies;
  for (const auto& dep : d) ++copies[dep.tag];
  for (const auto& [tag, n] : copies) ASSERT_LE(n, 2) << tag;

  LinkModel cor(parse("corrupt 10%"), 2);
  const auto c = run(cor, 100'000, 1us, 64);
  std::size_t flipped = 0;
  for (const auto& dep : c) {
    const auto original = packet(64, dep.tag);
    int bits = 0;
    for (std::size_t i = 0; i < 64; ++i)
      bits += std::popcount(std::to_integer<unsigned>(dep.bytes[i]) ^ std::to_integer<unsigned>(original[i]));
    ASSERT_LE(bits, 1);  // netem flips exactly one bit
    flipped += bits;
  }
  EXPECT_EQ(flipped, cor.counters().corrupted);
  EXPECT_NEAR(static_cast<double>(flipped) / 100'000, 0.10, 0.005);

  // tc-netem: after gap-1 delayed packets, each packet goes at once with 25%
  // until one does, then the count restarts: one in (gap-1) + 1/25% = 8.
  LinkModel re(parse("delay 10ms reorder 25% gap 5"), 2);
  const auto r = run(re, 200'000, 1ms);
  EXPECT_NEAR(static_cast<double>(re.counters().reordered) / 200'000, 1.0 / 8, 0.003);
  std::size_t early = 0;
  for (const auto& dep : r) early += dep.departs == dep.arrived;
  EXPECT_EQ(early, re.counters().reordered);
}

TEST(NetemModel, CountersAlwaysAddUp) {
  LinkModel link(parse("delay 5ms 2ms loss gemodel 5% 30% duplicate 10% corrupt 1% reorder 5% gap 2 rate 50mbit limit 20"), 4);
  Departure d;
  std::size_t out = 0;
  for (std::size_t i = 0; i < 100'000; ++i) {
    const Nanos now(static_cast<std::int64_t>(i) * 20'000);
    while (link.take_due(now, d)) ++out;
    link.submit(now, packet(200, i), i);
    if (i == 50'000) link.set_down(true);
    if (i == 60'000) link.set_down(false);
    const auto& c = link.counters();
    ASSERT_EQ(c.packets_in + c.duplicated, c.packets_out + c.lost + c.queue_full + c.link_down + link.held()) << i;
  }
  const auto& c = link.counters();
  EXPECT_EQ(c.packets_out, out);
  EXPECT_GT(c.lost, 0u);
  EXPECT_GT(c.queue_full, 0u);
  EXPECT_EQ(c.link_down, 10'000u);
  EXPECT_GT(c.duplicated, 0u);
  EXPECT_GT(c.reordered, 0u);
}

TEST(NetemModel, LinkDownDropsEverythingAndCounts) {
  LinkModel link(parse("delay 1ms down"), 1);
  EXPECT_TRUE(run(link, 1000, 1us).empty());
  EXPECT_EQ(link.counters().link_down, 1000u);
  link.set_down(false);
  EXPECT_EQ(run(link, 10, 1us).size(), 10u);
}

TEST(NetemModel, SameSeedSameOutputDifferentSeedDifferent) {
  const auto imp = parse("delay 30ms 5ms 25% distribution paretonormal loss gemodel 2% 20% duplicate 2% corrupt 1% reorder 10% gap 3");
  auto fingerprint = [&](std::uint64_t seed) {
    LinkModel link(imp, seed);
    std::uint64_t h = 1469598103934665603ull;
    for (const auto& d : run(link, 200'000, 100us)) {
      h = (h ^ d.tag) * 1099511628211ull;
      h = (h ^ static_cast<std::uint64_t>(d.departs.count())) * 1099511628211ull;
      for (std::byte b : d.bytes) h = (h ^ std::to_integer<std::uint64_t>(b)) * 1099511628211ull;
    }
    return h;
  };
  EXPECT_EQ(fingerprint(42), fingerprint(42));
  EXPECT_NE(fingerprint(42), fingerprint(43));
}

TEST(NetemSyntax, ParsesTcNetemArguments) {
  const auto imp = parse("delay 50ms 10ms 25% distribution normal loss random 1% 30% duplicate 2 corrupt 0.1% "
                         "reorder 25% 50% gap 5 rate 10mbit 20 limit 500");
  EXPECT_EQ(imp.delay, 50ms);
  EXPECT_EQ(imp.jitter, 10ms);
  EXPECT_DOUBLE_EQ(imp.delay_correlation, 0.25);
  EXPECT_EQ(imp.distribution, DelayDistribution::normal);
  EXPECT_EQ(imp.loss.kind, LossModel::Kind::random);
  EXPECT_DOUBLE_EQ(imp.loss.probability, 0.01);
  EXPECT_DOUBLE_EQ(imp.loss.correlation, 0.30);
  EXPECT_DOUBLE_EQ(imp.duplicate, 0.02);
  EXPECT_DOUBLE_EQ(imp.corrupt, 0.001);
  EXPECT_DOUBLE_EQ(imp.reorder, 0.25);
  EXPECT_EQ(imp.reorder_gap, 5u);
  EXPECT_EQ(imp.rate_bits_per_s, 10'000'000u);
  EXPECT_EQ(imp.packet_overhead, 20);
  EXPECT_EQ(imp.limit, 500u);

  const auto ge = parse("loss gemodel 1%");
  EXPECT_DOUBLE_EQ(ge.loss.r, 0.99);  // tc's defaults: r = 1 - p, 1-h = 100%, 1-k = 0
  EXPECT_DOUBLE_EQ(ge.loss.one_minus_h, 1.0);
  const auto st = parse("loss state 1% 5%");
  EXPECT_DOUBLE_EQ(st.loss.p31, 0.05);
  EXPECT_DOUBLE_EQ(st.loss.p23, 1.0);
  EXPECT_EQ(parse("delay 100").delay, 100us);
  EXPECT_EQ(parse("rate 1mbps").rate_bits_per_s, 8'000'000u);
  EXPECT_EQ(parse("").limit, 1000u);
}

TEST(NetemSyntax, RejectsWhatTcWouldReject) {
  for (const char* bad : {"delay", "delay fast", "loss", "loss 150%", "loss random x", "distribution gamma",
                          "reorder 10%", "rate", "rate 10parsecs", "limit 0", "gap 0", "jitter 5ms", "loss state"}) {
    std::string error;
    EXPECT_FALSE(parse_impairment(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

// Found by the netem syntax fuzzer: a jitter of 5.5e39 ms parsed (the time
// conversion overflowed) and crashed the Pareto-normal delay sampler; a 1 bit/s
// link with big cells overflowed the clock on its first packet. Times above an
// hour, rates above a petabit and overheads outside +-64 KiB are refused, a
// packet's transmission takes at most an hour, and the edges run.
TEST(NetemSyntax, RefusesValuesThatWouldOverflowAndRunsTheLargestAccepted) {
  for (const char* bad : {"delay 5ms 5555555555555555555555555555555555555510ms distribution paretonormal",
                          "delay 3601s", "delay 1ms 3601s", "rate 1e30bit", "rate 1001tbit",
                          "rate 1mbit 99999999", "rate 1mbit 0 70000", "rate 1mbit 0 64 -70000"}) {
    std::string error;
    EXPECT_FALSE(parse_impairment(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
  for (const char* edge : {"delay 3600s 3600s distribution paretonormal", "delay 3600s 3600s distribution pareto",
                           "rate 1bit -65535 65535 65535 limit 5", "rate 1000tbit 65535",
                           "rate 1 00265 1 026551"}) {
    LinkModel link(parse(edge), 3);
    Nanos now{0};
    Departure d;
    std::uint64_t out = 0;
    for (int i = 0; i < 20; ++i) link.submit(now, std::vector<std::byte>(1500));
    while (const auto next = link.next_departure()) {
      now = std::max(now, *next);
      while (link.take_due(now, d)) ++out;
    }
    EXPECT_EQ(out, link.counters().packets_out) << edge;
    EXPECT_GT(out, 0u) << edge;
  }
}

// What a capture marks must be exactly what the counters count: each submit
// says why a packet went nowhere, and each departure says what was done to it.
TEST(NetemModel, AdmissionsAndDepartureMarksAgreeWithTheCounters) {
  LinkModel link(parse("delay 5ms 3ms loss 8% duplicate 6% corrupt 4% reorder 10% limit 40"), 11);
  std::map<Admission::Drop, std::uint64_t> dropped;
  std::uint64_t copies = 0, corrupted = 0, duplicates = 0, reordered = 0, departed = 0;
  Departure d;
  Nanos now{0};
  const auto drain = [&](Nanos until) {
    while (link.take_due(until, d)) {
      departed += 1;
      corrupted += d.corrupted;
      duplicates += d.duplicate;
      reordered += d.reordered;
    }
  };
  for (std::uint64_t i = 0; i < 100'000; ++i, now += 100us) {
    drain(now);
    const Admission a = link.submit(now, packet(64, i), i);
    copies += a.copies;
    if (a.copies == 0) dropped[a.drop] += 1;
    if (i % 10'000 == 5'000) link.set_down(true);
    if (i % 10'000 == 5'100) link.set_down(false);
  }
  drain(now + 1s);
  const LinkCounters& c = link.counters();
  EXPECT_EQ(departed, c.packets_out);
  EXPECT_EQ(copies, c.packets_out);  // every queued copy leaves
  EXPECT_EQ(corrupted, c.corrupted);
  EXPECT_EQ(reordered, c.reordered);
  EXPECT_EQ(dropped[Admission::Drop::link_down], c.link_down);
  EXPECT_GT(c.queue_full, 0u);  // the limit of 40 is reached at 3 ms of jitter and 100 us spacing
  // A duplicated packet's extra copy may be the one a loss or a full queue takes.
  EXPECT_LE(duplicates, c.duplicated);
  EXPECT_LE(dropped[Admission::Drop::lost], c.lost);
  EXPECT_LE(dropped[Admission::Drop::queue_full], c.queue_full);
  EXPECT_EQ(c.packets_in, 100'000u);
  // Every copy made (one per packet, two when duplicated) is queued or dropped for one reason.
  EXPECT_EQ(c.packets_in + c.duplicated, copies + c.lost + c.queue_full + c.link_down);
}

// The capture file's block structure: a section header, two interfaces, then
// one enhanced packet block per packet with its comment; every block's two
// length fields agree and are multiples of 4.
TEST(PcapWriter, WritesWellFormedPcapngBlocks) {
  const std::string path = ::testing::TempDir() + "/volley-pcap-writer-test.pcapng";
  {
    PcapWriter w(path);
    const std::vector<std::byte> ip(29, std::byte{0x45});
    w.write(PcapWriter::Interface::received, ip, "netem: lost");
    w.write(PcapWriter::Interface::sent, ip);
    EXPECT_EQ(w.packets(), 2u);
    w.flush();
    EXPECT_EQ(w.errors(), 0u);
  }
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::uint32_t> types;
  std::size_t at = 0;
  std::string comment;
  while (at + 12 <= file.size()) {
    std::uint32_t type = 0, length = 0, trailer = 0;
    std::memcpy(&type, file.data() + at, 4);
    std::memcpy(&length, file.data() + at + 4, 4);
    ASSERT_EQ(length % 4, 0u);
    ASSERT_LE(at + length, file.size());
    std::memcpy(&trailer, file.data() + at + length - 4, 4);
    EXPECT_EQ(trailer, length);
    types.push_back(type);
    if (type == 6 && comment.empty()) {
      const std::size_t options = at + 28 + 32;  // header fields, then the 29-byte packet padded to 32
      std::uint16_t code = 0, size = 0;
      std::memcpy(&code, file.data() + options, 2);
      std::memcpy(&size, file.data() + options + 2, 2);
      EXPECT_EQ(code, 1);  // opt_comment
      comment.assign(file.data() + options + 4, size);
    }
    at += length;
  }
  EXPECT_EQ(at, file.size());
  EXPECT_EQ(types, (std::vector<std::uint32_t>{0x0A0D0D0A, 1, 1, 6, 6}));
  EXPECT_EQ(comment, "netem: lost");
  std::remove(path.c_str());
}

TEST(PcapWriter, AFileThatCannotBeCreatedIsAClearError) {
  EXPECT_THROW(PcapWriter("/nonexistent-folder/x.pcapng"), std::runtime_error);
}

// The virtual network: a datagram takes exactly the link's delay, the clock
// jumps to the next event (a departure or a timer the ends name), never
// backwards, and stops when nothing is left to happen.
TEST(VirtualNetwork, TheClockJumpsToTheNextEventAndDeliversWhatIsDue) {
  VirtualNetwork net(parse("delay 10ms"), parse("delay 30ms"), 1);
  const auto one = packet(100, 1), two = packet(40, 2);
  net.send_from_a(one);
  net.send_from_b(two);
  EXPECT_EQ(net.wire_bytes(), 140u);
  std::vector<std::pair<char, Nanos>> got;
  const auto at = [&](char end) {
    return [&got, &net, end](std::span<const std::byte>) { got.emplace_back(end, net.now()); };
  };
  net.deliver_to_b(at('b'));
  net.deliver_to_a(at('a'));
  EXPECT_TRUE(got.empty());  // nothing is due at 0

  ASSERT_TRUE(net.advance({Nanos(3ms), std::nullopt}));  // a timer before either departure
  EXPECT_EQ(net.now(), 3ms);
  ASSERT_TRUE(net.advance({Nanos(1ms)}));  // a timer in the past: the clock stays
  EXPECT_EQ(net.now(), 3ms);
  ASSERT_TRUE(net.advance({}));
  EXPECT_EQ(net.now(), 10ms);
  net.deliver_to_b(at('b'));
  net.deliver_to_a(at('a'));
  ASSERT_TRUE(net.advance({}));
  EXPECT_EQ(net.now(), 30ms);
  net.deliver_to_b(at('b'));
  net.deliver_to_a(at('a'));
  EXPECT_EQ(got, (std::vector<std::pair<char, Nanos>>{{'b', 10ms}, {'a', 30ms}}));

  EXPECT_FALSE(net.advance({std::nullopt}));  // nothing held, no timer: nothing will happen
  EXPECT_EQ(net.now(), 30ms);
  EXPECT_EQ(net.a_to_b().packets_out, 1u);
  EXPECT_EQ(net.b_to_a().packets_out, 1u);
}

TEST(VirtualNetwork, TheTwoDirectionsDropDifferentPacketsAndTheSameSeedRepeats) {
  const auto lost = [](std::uint64_t seed) {
    VirtualNetwork net(parse("loss 50%"), parse("loss 50%"), seed);
    std::vector<int> ab, ba;  // which of 64 packets each way arrived
    for (int i = 0; i < 64; ++i) {
      const auto p = packet(8, static_cast<std::uint64_t>(i));
      net.send_from_a(p);
      net.send_from_b(p);
      net.deliver_to_b([&](std::span<const std::byte>) { ab.push_back(i); });
      net.deliver_to_a([&](std::span<const std::byte>) { ba.push_back(i); });
    }
    return std::pair(ab, ba);
  };
  const auto first = lost(7);
  EXPECT_NE(first.first, first.second);
  EXPECT_EQ(first, lost(7));
  EXPECT_NE(first, lost(8));
}
