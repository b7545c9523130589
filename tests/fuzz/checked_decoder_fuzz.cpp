// libFuzzer target: the checked-frame decoder never crashes or wedges, and any
// chunking decodes exactly as one read does. A small maximum frame makes the
// skip-without-buffering path reachable.
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
    for (auto r = decoder.next(); r.status != checked::DecodeStatus::need_more; r = decoder.next()) {
      if (r.status == checked::DecodeStatus::frame && r.frame.payload.size() > 512) std::abort();
      events.push_back({r.status, r.frame.payload.size(), r.error.value()});
    }
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz_chunked_against_whole(data, size, 512, decode);
}
