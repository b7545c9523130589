// libFuzzer target: the checked-frame decoder never crashes or wedges, and any
// chunking decodes exactly as one read does. A small maximum frame makes the
// skip-without-buffering path reachable. Odd chunk sizes go through
// take_frame() before next() (a session's fast path), even ones through next()
// alone, so the comparison covers the two paths too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "chunked_differential.hpp"

#include <volley/wire/checked.hpp>

namespace checked = volley::wire::checked;

namespace {

struct Event {
  checked::DecodeStatus status;
  std::size_t size;
  int error;
  int type;            // of a frame; -1 for the rest
  std::uint32_t sum;   // of the payload's bytes
  bool operator==(const Event&) const = default;
};

std::vector<Event> decode(std::span<const std::byte> stream, std::size_t chunk) {
  checked::FrameDecoder decoder(512);
  std::vector<Event> events;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    const std::size_t n = decoder.feed(stream.subspan(pos, std::min(chunk, stream.size() - pos)));
    if (n == 0) std::abort();  // a drained decoder always takes a chunk this small: no wedge
    pos += n;
    for (;;) {
      if (chunk % 2 == 1) {
        if (const auto f = decoder.take_frame()) {
          if (f->payload.size() > 512) std::abort();
          events.push_back({checked::DecodeStatus::frame, f->payload.size(), 0, static_cast<int>(f->type), sum_of(f->payload)});
          continue;
        }
      }
      const auto r = decoder.next();
      if (r.status == checked::DecodeStatus::need_more) break;
      if (r.status == checked::DecodeStatus::frame && r.frame.payload.size() > 512) std::abort();
      const bool frame = r.status == checked::DecodeStatus::frame;
      events.push_back({r.status, r.frame.payload.size(), r.error.value(), frame ? static_cast<int>(r.frame.type) : -1,
                        sum_of(r.frame.payload)});
    }
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz_chunked_against_whole(data, size, 512, decode);
}
