// libFuzzer target: the RPC frame decoder never crashes, never hands out a body
// over its maximum, stops for good on a lying size, and any chunking decodes
// exactly as one read does.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "chunked_differential.hpp"

#include <volley/rpc/frame.hpp>

namespace {

constexpr std::size_t kMaxBody = 512;

struct Event {
  int status;
  std::uint32_t sequence, message_id;
  std::size_t size;
  bool operator==(const Event&) const = default;
};

std::vector<Event> decode(std::span<const std::byte> stream, std::size_t chunk) {
  volley::rpc::FrameDecoder decoder(kMaxBody);
  std::vector<Event> events;
  std::size_t pos = 0;
  bool failed = false;
  while (pos < stream.size() && !failed) {
    const auto space = decoder.prepare();
    if (space.empty()) std::abort();  // a drained decoder always has room: no wedge
    const std::size_t n = std::min({chunk, space.size(), stream.size() - pos});
    std::memcpy(space.data(), stream.data() + pos, n);
    decoder.commit(n);
    pos += n;
    volley::rpc::Frame f{};
    for (auto s = decoder.next(f); s != volley::rpc::FrameDecoder::Status::need_more; s = decoder.next(f)) {
      if (s == volley::rpc::FrameDecoder::Status::failed) {
        events.push_back({2, 0, 0, 0});
        failed = true;
        break;
      }
      if (f.body.size() > kMaxBody) std::abort();
      events.push_back({1, f.sequence, f.message_id, f.body.size()});
    }
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz_chunked_against_whole(data, size, 1 << 20, decode);
}
