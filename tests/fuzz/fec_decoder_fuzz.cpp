// libFuzzer target: the FEC decoder fed any mix of data packets and repair
// packets, valid or forged, never crashes, never rebuilds a packet that fails
// its own checksum or carries another sequence, and keeps its memory bounded.
// The input is a series of records: [kind u8][length u8][bytes]; kind 0 is a
// data packet made from the bytes (so it is valid), kind 1 a raw repair
// datagram, kind 2 a repair the fuzzer's bytes pick groups and symbols for
// (valid checksum, possibly lying contents).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include <volley/arq/fec.hpp>
#include <volley/arq/packet.hpp>

using namespace volley::arq;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FecDecoderConfig config;
  config.max_groups = 8;
  config.max_cached_packets = 32;
  FecDecoder decoder(config);
  const auto check = [](std::span<const std::byte> p) {
    const Decoded d = decode(p);
    if (d.error != PacketError::none || d.is_ack) std::abort();  // rebuilt packets are always valid data
  };
  const auto ignore = [](std::span<const std::byte>) {};
  std::vector<std::byte> packet;
  std::size_t pos = 0;
  while (pos + 2 <= size) {
    const unsigned kind = data[pos] % 3;
    const std::size_t n = std::min<std::size_t>(data[pos + 1], size - pos - 2);
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data + pos + 2), n);
    pos += 2 + n;
    if (kind == 0) {
      const std::uint32_t sequence = n > 0 ? std::to_integer<std::uint32_t>(bytes[0]) % 16 : 0;
      encode_data({1, sequence, false, bytes}, packet);
      decoder.on_data_packet(packet, sequence, check);
    } else if (kind == 1) {
      decoder.on_repair(bytes, check, ignore);
    } else if (n >= 4) {
      RepairPacket r;
      r.conversation = 1;
      r.group = std::to_integer<std::uint32_t>(bytes[0]) % 4;
      r.m = static_cast<std::uint8_t>(1 + std::to_integer<unsigned>(bytes[1]) % 3);
      r.index = static_cast<std::uint8_t>(std::to_integer<unsigned>(bytes[2]) % r.m);
      const unsigned k = 1 + std::to_integer<unsigned>(bytes[3]) % 4;
      for (unsigned j = 0; j < k; ++j) r.sequences.push_back(j);
      r.symbol = bytes.subspan(4);
      if (r.symbol.size() < 2) continue;
      encode_repair(r, packet);
      decoder.on_repair(packet, check, ignore);
    }
    if (decoder.groups_held() > config.max_groups || decoder.packets_held() > config.max_cached_packets) std::abort();
  }
  return 0;
}
