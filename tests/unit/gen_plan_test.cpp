#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <volley/wire/byte_order.hpp>
#include <volley/gnb/decoder.hpp>

#include "gen_plan.hpp"

using namespace volley::tools;

TEST(GenPlan, ParsesTheSeedSyntax) {
  std::string error;
  const auto spec = parse_spec("8001:1500:50", error);
  ASSERT_TRUE(spec) << error;
  EXPECT_EQ(spec->type, 0x8001);
  EXPECT_EQ(spec->size, 1500u);
  EXPECT_EQ(spec->fraction, 50u);
  EXPECT_EQ(parse_spec("0x1001:64:25", error)->type, 0x1001);
  for (const char* bad : {"", "1001", "1001:64", "1001:64:25:1", "10000x:1:1", "1001:-1:5", "1001:64:101", "g:1:1"})
    EXPECT_FALSE(parse_spec(bad, error)) << bad;
}

TEST(GenPlan, ValidatesFractionsAndLimits) {
  EXPECT_EQ(validate_specs({{0x1001, 64, 25}, {0x1002, 16, 25}, {0x8001, 1200, 50}}, false), "");
  EXPECT_NE(validate_specs({{0x1001, 64, 25}}, false).find("add up to 25"), std::string::npos);
  EXPECT_NE(validate_specs({{0x1001, 65, 100}}, false), "");
  EXPECT_NE(validate_specs({{0x1001, 3, 100}}, false), "");  // no room for the transaction id
  EXPECT_NE(validate_specs({{0x1003, 13, 100}}, false), "");
  EXPECT_EQ(validate_specs({{0x8001, 65536, 100}}, false), "");
  EXPECT_NE(validate_specs({{0x8001, 65537, 100}}, false), "");
  EXPECT_EQ(validate_specs({{0x8001, 65537, 50}, {0x4242, 3, 50}}, true), "");
  EXPECT_NE(validate_specs({{0x8001, kMaxInvalidSize + 1, 100}}, true), "");
  EXPECT_NE(validate_specs({}, false), "");
}

TEST(GenPlan, InterleavesEvenlyWithExactCounts) {
  const std::vector<MessageSpec> specs{{0x1001, 64, 25}, {0x1002, 16, 25}, {0x8001, 1200, 50}};
  const auto order = interleave(specs);
  ASSERT_EQ(order.size(), 100u);
  std::map<std::size_t, int> counts;
  for (auto i : order) ++counts[i];
  EXPECT_EQ(counts[0], 25);
  EXPECT_EQ(counts[1], 25);
  EXPECT_EQ(counts[2], 50);
  // Spread out, not in runs: data never appears more than twice in a row here.
  int run = 0, longest = 0;
  for (auto i : order) {
    run = i == 2 ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  EXPECT_LE(longest, 2);
}

TEST(GenPlan, BlocksDecodeToThePlannedFrames) {
  const std::vector<MessageSpec> specs{{0x1001, 64, 30}, {0x1001, 2, 10}, {0x8001, 700, 60}};
  const auto order = interleave(specs);
  const std::size_t cycles = cycles_for(specs, order, 100000);
  const FrameBlock block = build_block(specs, order, cycles, PayloadKind::random, 3);
  EXPECT_GE(block.bytes.size(), 100000u);
  EXPECT_EQ(block.frames.size(), 100 * cycles);
  EXPECT_EQ(block.controls.size(), 30 * cycles);  // the 2-byte controls have no id slot

  volley::gnb::FrameDecoder decoder;
  std::size_t pos = 0, frame = 0;
  while (pos < block.bytes.size()) {
    pos += decoder.feed(std::span(block.bytes).subspan(pos));
    for (auto r = decoder.next(); r.status != volley::gnb::DecodeStatus::need_more; r = decoder.next()) {
      const auto& spec = specs[block.frames[frame].spec];
      EXPECT_EQ(static_cast<std::uint16_t>(r.frame.type), spec.type);
      EXPECT_EQ(r.frame.body.size(), spec.size);
      ++frame;
    }
  }
  EXPECT_EQ(frame, block.frames.size());
}
