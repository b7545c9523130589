// Microbenchmarks of the per-message path, without sockets: decoding, the three
// dispatch styles of the gNB handler benchmark, CRC-32C and histogram recording.
#include <benchmark/benchmark.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "legacy_messages.hpp"
#include <volley/dispatch/dispatcher.hpp>
#include <volley/gnb/dispatch_protocol.hpp>
#include <volley/gnb/views.hpp>
#include <volley/metrics/histogram.hpp>
#include <volley/wire/crc32c.hpp>
#include <volley/gnb/decoder.hpp>

namespace gnb = volley::gnb;
namespace dispatch = volley::dispatch;
namespace legacy = volley::benchmarks::legacy;

namespace {

// The classic mix (25% control 64 B, 25% ack 16 B, 50% data of `data_size`), interleaved.
std::vector<std::byte> mix_stream(std::size_t data_size, std::size_t messages) {
  std::vector<std::byte> s;
  const std::array<std::pair<std::uint16_t, std::size_t>, 4> cycle{
      {{0x1001, 64}, {0x8001, data_size}, {0x1002, 16}, {0x8001, data_size}}};
  for (std::size_t i = 0; i < messages; ++i) {
    const auto [type, size] = cycle[i % cycle.size()];
    const std::size_t at = s.size();
    s.resize(at + gnb::kHeaderSize + size, std::byte{0x5A});
    gnb::write_header(s.data() + at, type, static_cast<std::uint32_t>(size));
  }
  return s;
}

std::vector<gnb::Frame> decode_all(const std::vector<std::byte>& stream) {
  // Frames as views into `stream`, as the decoder hands them out.
  std::vector<gnb::Frame> frames;
  std::size_t at = 0;
  while (at < stream.size()) {
    const auto type = static_cast<gnb::MessageType>(volley::wire::load_u16_be(stream.data() + at));
    const std::size_t len = volley::wire::load_u32_be(stream.data() + at + 2);
    frames.push_back({type, std::span(stream).subspan(at + gnb::kHeaderSize, len)});
    at += gnb::kHeaderSize + len;
  }
  return frames;
}

// The typed work: per-type counts and a look at each fixed field.
struct TypedWork {
  std::array<std::uint64_t, 5> counts{};
  std::uint64_t ids = 0;
  void operator()(const gnb::ControlView& v) { ++counts[0]; ids += v.transaction_id; }
  void operator()(const gnb::AckView& v) { ++counts[1]; ids += v.transaction_id; }
  void operator()(const gnb::NackView& v) { ++counts[2]; ids += v.transaction_id; }
  void operator()(const gnb::AckChecksumView& v) { ++counts[3]; ids += v.checksum; }
  void operator()(const gnb::DataView& v) { ++counts[4]; ids += v.body.size(); }
};

void BM_DecodeMix(benchmark::State& state) {
  const auto stream = mix_stream(static_cast<std::size_t>(state.range(0)), 4000);
  std::uint64_t frames = 0;
  for (auto _ : state) {
    gnb::FrameDecoder decoder;
    std::size_t pos = 0;
    while (pos < stream.size()) {
      auto room = decoder.prepare();
      const std::size_t n = std::min(room.size(), stream.size() - pos);
      std::memcpy(room.data(), stream.data() + pos, n);  // stands in for the socket read
      decoder.commit(n);
      pos += n;
      for (auto r = decoder.next(); r.status == gnb::DecodeStatus::frame; r = decoder.next()) {
        benchmark::DoNotOptimize(r.frame.body.data());
        ++frames;
      }
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(frames));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * stream.size()));
}
BENCHMARK(BM_DecodeMix)->Arg(1200)->Arg(8000);

void BM_DispatchVariant(benchmark::State& state) {
  const auto stream = mix_stream(static_cast<std::size_t>(state.range(0)), 4000);
  const auto frames = decode_all(stream);
  TypedWork work;
  for (auto _ : state) {
    for (const auto& f : frames) gnb::dispatch(f, work);
    benchmark::DoNotOptimize(work.ids);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * frames.size()));
}
BENCHMARK(BM_DispatchVariant)->Arg(1200)->Arg(8000);

// A handler registered per type at run time, each doing the typed work.
void register_views(dispatch::Dispatcher<gnb::GnbProtocol>& d, TypedWork& work) {
  d.on<gnb::ControlView>(0x1001, [&](const gnb::ControlView& v) { work(v); })
      .on<gnb::AckView>(0x1002, [&](const gnb::AckView& v) { work(v); })
      .on<gnb::NackView>(0x1003, [&](const gnb::NackView& v) { work(v); })
      .on<gnb::AckChecksumView>(0x1004, [&](const gnb::AckChecksumView& v) { work(v); })
      .on<gnb::DataView>(0x8001, [&](const gnb::DataView& v) { work(v); });
}

// The same work through a Dispatcher<GnbProtocol> with a handler registered
// per type at run time: an id lookup and a std::function call per frame.
void BM_DispatchRegistered(benchmark::State& state) {
  const auto stream = mix_stream(static_cast<std::size_t>(state.range(0)), 4000);
  const auto frames = decode_all(stream);
  TypedWork work;
  dispatch::Dispatcher<gnb::GnbProtocol> d;
  register_views(d, work);
  for (auto _ : state) {
    // Whole frames, as a gNB session delivers them.
    for (const auto& f : frames) d.dispatch({f.body.data() - gnb::kHeaderSize, f.wire_size()});
    benchmark::DoNotOptimize(work.ids);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * frames.size()));
}
BENCHMARK(BM_DispatchRegistered)->Arg(1200)->Arg(8000);

// The same, handed the messages as a gNB session's codec delivers them (type
// and body read already): the dispatcher opens nothing again.
void BM_DispatchRegisteredMessage(benchmark::State& state) {
  const auto stream = mix_stream(static_cast<std::size_t>(state.range(0)), 4000);
  std::vector<volley::net::Message> messages;
  for (const auto& f : decode_all(stream))
    messages.push_back({.bytes = {f.body.data() - gnb::kHeaderSize, f.wire_size()},
                        .id = static_cast<std::uint16_t>(f.type),
                        .body = f.body});
  TypedWork work;
  dispatch::Dispatcher<gnb::GnbProtocol> d;
  register_views(d, work);
  for (auto _ : state) {
    for (const auto& m : messages) d.dispatch(m);
    benchmark::DoNotOptimize(work.ids);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * messages.size()));
}
BENCHMARK(BM_DispatchRegisteredMessage)->Arg(1200)->Arg(8000);

void BM_DispatchVirtual(benchmark::State& state) {
  const auto stream = mix_stream(static_cast<std::size_t>(state.range(0)), 4000);
  const auto frames = decode_all(stream);
  TypedWork work;
  for (auto _ : state) {
    for (const auto& f : frames) {
      const auto message = legacy::make_message(f);
      legacy::dispatch(*message, work);
    }
    benchmark::DoNotOptimize(work.ids);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * frames.size()));
}
BENCHMARK(BM_DispatchVirtual)->Arg(1200)->Arg(8000);

void BM_DispatchDummy(benchmark::State& state) {
  const auto stream = mix_stream(static_cast<std::size_t>(state.range(0)), 4000);
  const auto frames = decode_all(stream);
  std::uint64_t nonempty = 0;
  for (auto _ : state) {
    for (const auto& f : frames) nonempty += f.wire_size() != 0;
    benchmark::DoNotOptimize(nonempty);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * frames.size()));
}
BENCHMARK(BM_DispatchDummy)->Arg(1200)->Arg(8000);

void BM_Crc32c(benchmark::State& state) {
  std::vector<std::byte> data(static_cast<std::size_t>(state.range(0)), std::byte{0x42});
  for (auto _ : state) benchmark::DoNotOptimize(volley::wire::crc32c(data));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * data.size()));
}
BENCHMARK(BM_Crc32c)->Arg(64)->Arg(1200);

void BM_Crc32cPortable(benchmark::State& state) {
  std::vector<std::byte> data(static_cast<std::size_t>(state.range(0)), std::byte{0x42});
  for (auto _ : state) benchmark::DoNotOptimize(volley::wire::crc32c_portable(data));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * data.size()));
}
BENCHMARK(BM_Crc32cPortable)->Arg(64)->Arg(1200);

void BM_HistogramRecord(benchmark::State& state) {
  volley::metrics::Histogram h;
  std::mt19937_64 rng(1);
  std::vector<std::uint64_t> values(4096);
  for (auto& v : values) v = rng() % 10'000'000;
  std::size_t i = 0;
  for (auto _ : state) h.record(values[i++ & 4095]);
  benchmark::DoNotOptimize(h.count());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_HistogramRecord);

}  // namespace

BENCHMARK_MAIN();
