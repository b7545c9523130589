// The netem link model inside a unit test of your own protocol: packets go
// through a lossy, jittery link on a virtual clock, so the test is exact,
// repeatable and takes milliseconds. The protocol under test here is a
// receiver that tells lost packets from late ones by their sequence numbers.
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <volley/netem/link_model.hpp>

namespace netem = volley::netem;
using namespace std::chrono_literals;

// Your protocol's receiving side: sequence numbers in, gap statistics out.
class GapDetector {
 public:
  void on_packet(std::uint32_t sequence) {
    if (sequence < highest_) ++late_;
    if (sequence > highest_) highest_ = sequence;
    seen_.insert(sequence);
  }
  std::uint64_t missing(std::uint32_t sent) const { return sent - seen_.size(); }
  std::uint64_t late() const { return late_; }

 private:
  std::set<std::uint32_t> seen_;
  std::uint32_t highest_ = 0;
  std::uint64_t late_ = 0;
};

std::uint32_t sequence_of(const netem::Departure& d) {
  std::uint32_t seq = 0;
  std::memcpy(&seq, d.bytes.data(), sizeof seq);
  return seq;
}

TEST(GapDetector, CountsExactlyWhatTheLinkLostAndReordered) {
  std::string error;
  const auto impairment = netem::parse_impairment("delay 10ms 4ms loss random 3%", error);
  ASSERT_TRUE(impairment) << error;
  netem::LinkModel link(*impairment, /*seed=*/42);
  GapDetector receiver;

  constexpr std::uint32_t kPackets = 20'000;
  netem::Departure out;
  netem::Nanos now{0};
  for (std::uint32_t seq = 0; seq < kPackets; ++seq, now += 1ms) {  // a packet every millisecond
    std::vector<std::byte> packet(sizeof seq);
    std::memcpy(packet.data(), &seq, sizeof seq);
    link.submit(now, std::move(packet));
    while (link.take_due(now, out)) receiver.on_packet(sequence_of(out));
  }
  while (link.take_due(now + 1s, out)) receiver.on_packet(sequence_of(out));

  // The model counts what it did; the protocol must have seen exactly that.
  EXPECT_EQ(receiver.missing(kPackets), link.counters().lost);
  EXPECT_NEAR(static_cast<double>(link.counters().lost) / kPackets, 0.03, 0.005);
  EXPECT_GT(receiver.late(), 0u);  // 4 ms of jitter on 1 ms spacing reorders
}
