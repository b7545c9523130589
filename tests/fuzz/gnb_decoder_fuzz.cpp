// libFuzzer target: the gNB FrameDecoder must never crash, never hand out a frame
// that breaks the protocol, and must decode the same whatever the chunking.
// The first input byte picks the chunk size, the rest is the stream. Odd
// chunk sizes go through take_frame() before next() (a session's fast path),
// even ones through next() alone, so the comparison covers the two paths too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "chunked_differential.hpp"

#include <volley/gnb/decoder.hpp>

namespace gnb = volley::gnb;

namespace {

struct Event {
  gnb::DecodeStatus status;
  std::size_t size;
  std::uint32_t checksum;
  bool operator==(const Event&) const = default;
};

std::vector<Event> decode(std::span<const std::byte> stream, std::size_t chunk) {
  gnb::FrameDecoder decoder;
  std::vector<Event> events;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    const std::size_t n = decoder.feed(stream.subspan(pos, std::min(chunk, stream.size() - pos)));
    if (n == 0) std::abort();  // after a drain, a chunk of this size always fits
    pos += n;
    for (;;) {
      if (chunk % 2 == 1) {
        if (const auto f = decoder.take_frame()) {
          const auto& info = gnb::type_info(f->type);
          if (f->body.size() < info.min_body || f->body.size() > info.max_body) std::abort();
          events.push_back({gnb::DecodeStatus::frame, f->body.size(), sum_of(f->body)});
          continue;
        }
      }
      const auto r = decoder.next();
      if (r.status == gnb::DecodeStatus::need_more) break;
      if (r.status == gnb::DecodeStatus::failed) {
        events.push_back({r.status, 0, r.raw_type});
        return events;
      }
      const auto& info = gnb::type_info(r.frame.type);
      const bool legal = r.frame.body.size() >= info.min_body && r.frame.body.size() <= info.max_body;
      if (legal != (r.status == gnb::DecodeStatus::frame)) std::abort();
      if (r.frame.body.size() > gnb::kMaxBodyLength) std::abort();
      events.push_back({r.status, r.frame.body.size(), sum_of(r.frame.body)});
    }
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz_chunked_against_whole(data, size, gnb::kMaxFrameSize, decode);
}
