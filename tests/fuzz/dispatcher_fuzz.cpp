// libFuzzer target: typed dispatch never crashes on any message of any of its
// protocols, hands a handler only what its type accepts (gNB views within their
// type's layout, bodies inside the message), and counts every message exactly
// once as handled, unknown, unopened or undecodable.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <volley/dispatch/dispatcher.hpp>
#include <volley/gnb/dispatch_protocol.hpp>
#include <volley/rpc/protocol.hpp>

namespace {

namespace dispatch = volley::dispatch;
namespace gnb = volley::gnb;

struct Inner {
  std::uint8_t a;
  std::uint64_t b;
};
struct Order {  // what a user might decode: strings, vectors, optionals, nesting
  std::string symbol;
  std::uint32_t quantity;
  std::vector<std::int16_t> legs;
  std::optional<double> limit;
  Inner inner;
};

void inside(std::span<const std::byte> part, std::span<const std::byte> whole) {
  if (part.empty()) return;
  if (part.data() < whole.data() || part.data() + part.size() > whole.data() + whole.size()) std::abort();
}

void fits(gnb::MessageType type, std::size_t body_size) {
  const auto& info = gnb::kTypes[*gnb::type_index(static_cast<std::uint16_t>(type))];
  if (body_size < info.min_body || body_size > info.max_body) std::abort();
}

template <class D>
void check_counts(const D& d, std::uint64_t calls) {
  const auto& s = d.stats();
  if (s.handled + s.unknown_id + s.unopened + s.undecodable != calls) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::byte> message(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      dispatch::Dispatcher<gnb::GnbProtocol> d;
      d.on<gnb::ControlView>(0x1001, [&](const gnb::ControlView& v) {
         inside(v.body, message);
         fits(gnb::MessageType::control, v.body.size());
       })
          .on<gnb::AckView>(0x1002, [](const gnb::AckView&) {})
          .on<gnb::NackView>(0x1003, [](const gnb::NackView&) {})
          .on<gnb::AckChecksumView>(0x1004, [](const gnb::AckChecksumView&) {})
          .on<gnb::DataView>(0x8001, [&](const gnb::DataView& v) {
            inside(v.body, message);
            fits(gnb::MessageType::data, v.body.size());
          });
      d.dispatch(message);
      check_counts(d, 1);
      break;
    }
    case 1: {
      dispatch::Dispatcher<dispatch::LeadingId<std::uint8_t>> d;
      d.on<Order>(1, [](const Order& o) {
        if (o.symbol.size() > 1 << 20) std::abort();
      });
      d.on<std::span<const std::byte>>(2, [&](std::span<const std::byte> body) { inside(body, message); });
      d.dispatch(message);
      d.dispatch(message);  // the kept instance decoded into again
      check_counts(d, 2);
      break;
    }
    default: {
      dispatch::Dispatcher<volley::rpc::RpcProtocol> d;
      d.on<Order>(1, [](const Order&) {});
      d.on<std::span<const std::byte>>(2, [&](std::span<const std::byte> body) { inside(body, message); });
      d.dispatch(message);
      check_counts(d, 1);
    }
  }
  return 0;
}
