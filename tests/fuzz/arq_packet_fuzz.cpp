// libFuzzer target: the ARQ packet decoders (data, ack, FEC repair and report)
// never crash, and whatever decodes encodes back to the very same bytes, so
// nothing is accepted that the encoder could not have produced.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include <volley/arq/fec.hpp>
#include <volley/arq/packet.hpp>

using namespace volley::arq;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  std::vector<std::byte> out;
  const Decoded d = decode(in);
  if (d.error == PacketError::none) {
    if (d.is_ack) encode_ack(d.ack, out);
    else encode_data(d.data, out);
    if (!std::equal(out.begin(), out.end(), in.begin(), in.end())) std::abort();
  }
  RepairPacket repair;
  if (decode_repair(in, repair)) {
    encode_repair(repair, out);
    if (!std::equal(out.begin(), out.end(), in.begin(), in.end())) std::abort();
  }
  FecReport report;
  if (decode_report(in, report)) {
    encode_report(report, out);
    if (!std::equal(out.begin(), out.end(), in.begin(), in.end())) std::abort();
  }
  return 0;
}
