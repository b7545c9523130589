// libFuzzer target: the shared-memory ring over arbitrary contents. The input
// is the region a hostile peer made (its header, both control blocks and the
// data), then a script of what the peer writes into its indices and words
// while this side reads and writes. Whatever it writes: check_region accepts
// only a region it can use, nothing is read or written outside the mapping
// (AddressSanitizer's guard), a read never returns more than asked or than
// the ring holds, room to build a message in lies inside the ring, and a
// corrupt index is reported, never followed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <volley/wire/shm_ring.hpp>

namespace shm = volley::wire::shm;

namespace {

constexpr std::size_t kCapacity = shm::kMinCapacity;

template <class T>
T take(const std::uint8_t*& data, std::size_t& size) {
  T v{};
  const std::size_t n = size < sizeof v ? size : sizeof v;
  std::memcpy(&v, data, n);
  data += n;
  size -= n;
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The mapping is exactly region_size(kCapacity) (ASan catches a step past
  // its end); the peer's bytes fill it from the input.
  const std::size_t region_size = shm::region_size(kCapacity);
  std::vector<std::uint64_t> words(region_size / 8);
  auto* region = reinterpret_cast<std::byte*>(words.data());
  const std::size_t header = size < region_size ? size : region_size;
  std::memcpy(region, data, header);

  // The header as the peer wrote it: accepted only when it fits the mapping.
  std::error_code ec;
  const std::size_t checked = shm::check_region({region, region_size}, ec);
  if (!ec && (checked == 0 || shm::region_size(checked) > region_size)) std::abort();

  data += header;
  size -= header;
  const std::span<std::byte> mine = shm::ring_of({region, region_size}, kCapacity, 0);
  const std::span<std::byte> theirs = shm::ring_of({region, region_size}, kCapacity, 1);
  volley::wire::ShmRingReader reader(mine, kCapacity);
  volley::wire::ShmRingWriter writer(theirs, kCapacity);
  const volley::wire::ShmRingControl peer_in(mine), peer_out(theirs);
  std::vector<std::byte> out(kCapacity * 2);
  const std::vector<std::byte> in(kCapacity * 2, std::byte{0x5a});
  while (size > 0) {
    // The peer moves its words, then this side reads, and writes.
    *peer_in.write_index = take<std::uint64_t>(data, size);
    *peer_out.read_index = take<std::uint64_t>(data, size);
    *peer_in.writer_closed = take<std::uint8_t>(data, size) & 1;
    const std::size_t want = take<std::uint16_t>(data, size) % out.size();
    const std::size_t n = reader.read(std::span(out).first(want), ec);
    if (n > want || n > kCapacity || (ec && n != 0)) std::abort();
    reader.writer_needs_doorbell();
    if (!ec) reader.ask_for_doorbell(ec);
    const std::uint16_t script = take<std::uint16_t>(data, size);
    const std::size_t give = (script >> 1) % in.size();
    if (script & 1) {  // a message built in place: its room lies wholly inside the ring's data
      const std::span<std::byte> room = writer.reserve(give, ec);
      const std::byte* const ring_data = theirs.data() + shm::kRingControlSize;
      if (!room.empty() && (room.size() != give || ec || room.data() < ring_data ||
                            room.data() + room.size() > ring_data + kCapacity))
        std::abort();
      if (!room.empty()) {
        std::memset(room.data(), 0x5a, room.size());
        writer.commit(room.size() / 2);
        writer.publish();
      }
    } else {
      const std::size_t m = writer.write(std::span(in).first(give), ec);
      if (m > give || m > kCapacity || (ec && m != 0)) std::abort();
    }
    writer.reader_needs_doorbell();
    if (!ec) writer.ask_for_room(ec);
  }
  return 0;
}
