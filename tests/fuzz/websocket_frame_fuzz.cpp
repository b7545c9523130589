// libFuzzer target: the WebSocket frame receiver never crashes or wedges,
// never writes past the room it is given, keeps its message limit, and any
// chunking of the input and any size of output room decode exactly as one
// piece into ample room does. The first byte picks the chunk, the room and
// whether the peer is a client (masked frames) or a server.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <volley/wire/websocket.hpp>

namespace ws = volley::wire::websocket;

namespace {

struct Outcome {
  std::string data;
  std::vector<int> events;  // event, and for a control frame its payload size
  int error = 0;
  bool operator==(const Outcome&) const = default;
};

constexpr std::uint64_t kMaxMessage = 4096;

Outcome decode(std::span<const std::byte> stream, bool masked, std::size_t chunk, std::size_t room) {
  ws::Receiver receiver(masked, kMaxMessage);
  Outcome o;
  std::vector<std::byte> out(room + 8);
  std::size_t pos = 0;
  while (pos < stream.size()) {
    std::span<const std::byte> in = stream.subspan(pos, std::min(chunk, stream.size() - pos));
    pos += in.size();
    while (!in.empty()) {
      const auto r = receiver.decode(in, std::span(out).first(room));
      if (r.consumed > in.size() || r.produced > room) std::abort();
      o.data.append(reinterpret_cast<const char*>(out.data()), r.produced);
      in = in.subspan(r.consumed);
      if (r.event == ws::Receiver::Event::error) {
        o.error = receiver.error().value();
        return o;
      }
      if (r.event != ws::Receiver::Event::none) {
        o.events.push_back(static_cast<int>(r.event));
        o.events.push_back(static_cast<int>(receiver.control_payload().size()));
        if (r.event == ws::Receiver::Event::close) return o;
        continue;
      }
      // Stopped with input left and room free: only a partial header or payload may remain, never bytes it refused.
      if (!in.empty() && r.produced < room) std::abort();
      if (r.consumed == 0 && r.produced == 0) std::abort();  // no progress with room and input: a wedge
    }
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool masked = (data[0] & 1) != 0;
  const std::size_t chunk = 1 + (data[0] >> 1) % 32;
  const std::size_t room = 1 + (data[0] >> 3) % 16;
  const std::span<const std::byte> stream(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  const Outcome whole = decode(stream, masked, stream.size() + 1, 1 << 16);
  if (decode(stream, masked, chunk, room) != whole) std::abort();
  return 0;
}
