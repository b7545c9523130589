#include <gtest/gtest.h>

#include <vector>

#include "legacy_messages.hpp"
#include <volley/gnb/views.hpp>
#include <volley/gnb/decoder.hpp>

using namespace volley::dispatch;
namespace legacy = volley::benchmarks::legacy;
using namespace volley::gnb;

namespace {

struct Recorder {
  std::vector<std::string> seen;
  void operator()(const ControlView& v) { seen.push_back("control " + std::to_string(v.transaction_id) + " " + std::to_string(v.body.size())); }
  void operator()(const AckView& v) { seen.push_back("ack " + std::to_string(v.transaction_id)); }
  void operator()(const NackView& v) { seen.push_back("nack " + std::to_string(v.transaction_id) + " " + std::to_string(v.cause)); }
  void operator()(const AckChecksumView& v) { seen.push_back("ackc " + std::to_string(v.transaction_id) + " " + std::to_string(v.checksum)); }
  void operator()(const DataView& v) { seen.push_back("data " + std::to_string(v.body.size())); }
};

std::vector<std::byte> sample_stream() {
  std::vector<std::byte> s;
  auto add = [&](auto frame) { s.insert(s.end(), frame.begin(), frame.end()); };
  std::array<std::byte, 14> control{};
  write_header(control.data(), 0x1001, 8);
  control[9] = std::byte{42};
  add(control);
  add(make_ack_frame({7}));
  add(make_nack_frame({8, NackCause::body_too_short}));
  add(make_ack_checksum_frame({9, 0xABCD}));
  std::array<std::byte, 9> data{};
  write_header(data.data(), 0x8001, 3);
  add(data);
  return s;
}

template <class Dispatch>
std::vector<std::string> run(Dispatch dispatch_one) {
  FrameDecoder decoder;
  const auto s = sample_stream();
  decoder.feed(s);
  Recorder r;
  for (DecodeResult d = decoder.next(); d.status == DecodeStatus::frame; d = decoder.next()) dispatch_one(d.frame, r);
  return r.seen;
}

}  // namespace

TEST(Dispatch, VariantCallsTheOverloadForEachType) {
  const auto seen = run([](const Frame& f, Recorder& r) { dispatch(f, r); });
  const std::vector<std::string> expected{"control 42 8", "ack 7", "nack 8 1", "ackc 9 43981", "data 3"};
  EXPECT_EQ(seen, expected);
}

TEST(Dispatch, LegacyHeapPathSeesTheSameViews) {
  const auto variant = run([](const Frame& f, Recorder& r) { dispatch(f, r); });
  const auto legacy = run([](const Frame& f, Recorder& r) {
    const auto message = legacy::make_message(f);
    legacy::dispatch(*message, r);
  });
  EXPECT_EQ(legacy, variant);
}

TEST(Dispatch, OverloadedLambdas) {
  int controls = 0, others = 0;
  const auto s = sample_stream();
  FrameDecoder decoder;
  decoder.feed(s);
  for (DecodeResult d = decoder.next(); d.status == DecodeStatus::frame; d = decoder.next())
    dispatch(d.frame, Overloaded{[&](const ControlView&) { ++controls; }, [&](const auto&) { ++others; }});
  EXPECT_EQ(controls, 1);
  EXPECT_EQ(others, 4);
}
