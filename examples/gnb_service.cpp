// A gNB service: each connection is a gNB session (keepalives, a silent peer
// dropped), and its messages reach typed handlers per message type through a
// Dispatcher; control messages are acknowledged. Nothing here allocates per message.
// Usage: gnb_service [PORT]   then point `traffic_generator --port PORT` at it.
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include <volley/dispatch/dispatcher.hpp>
#include <volley/gnb/dispatch_protocol.hpp>
#include <volley/gnb/session_codec.hpp>
#include <volley/net/server.hpp>
#include <volley/net/session.hpp>

namespace net = volley::net;
namespace gnb = volley::gnb;

struct Counts {
  std::atomic<std::uint64_t> control{0}, data{0}, other{0}, errors{0};
};

class GnbEvents final : public net::SessionEvents {
 public:
  explicit GnbEvents(Counts& counts) : counts_(counts) {
    handlers_.on<gnb::ControlView>(0x1001, [this](net::Session& s, const gnb::ControlView& m) {
      counts_.control.fetch_add(1, std::memory_order_relaxed);
      s.send(gnb::make_ack_frame({m.transaction_id}));
    });
    handlers_.on<gnb::DataView>(0x8001, [this](net::Session&, const gnb::DataView&) {
      counts_.data.fetch_add(1, std::memory_order_relaxed);
    });
    handlers_.on_unknown([this](net::Session&, const auto&) { counts_.other.fetch_add(1, std::memory_order_relaxed); });
  }

  // A whole gNB frame, checked by the session's codec, which read its type and body too.
  void on_message(net::Session& s, const net::Message& frame) override { handlers_.dispatch(frame, s); }
  // An oversize or undersize body (skipped, the stream stays in sync), or a
  // header that cannot be trusted (closing).
  void on_protocol_error(net::Session&, const std::error_code& e, std::span<const std::byte>, bool closing) override {
    counts_.errors.fetch_add(1);
    if (closing) std::fprintf(stderr, "closing a connection: %s\n", e.message().c_str());
  }

 private:
  Counts& counts_;
  volley::dispatch::Dispatcher<gnb::GnbProtocol, net::Session> handlers_;
};

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 0);
  Counts counts;
  net::SessionOptions options;
  options.heartbeat_interval = std::chrono::seconds(0);  // the generator sends no keepalives unless asked
  net::Server server({.bind = "127.0.0.1", .port = port, .threads = 2});
  server.listen([&](std::size_t) {
    return std::make_unique<net::Session>(gnb::make_gnb_codec(), options, std::make_unique<GnbEvents>(counts));
  });
  server.on_ready([&] {
    std::printf("listening tcp 127.0.0.1:%u\n", server.port());
    std::fflush(stdout);
  });
  server.run();
  std::printf("control %llu (acked), data %llu, other %llu, errors %llu\n",
              static_cast<unsigned long long>(counts.control.load()), static_cast<unsigned long long>(counts.data.load()),
              static_cast<unsigned long long>(counts.other.load()), static_cast<unsigned long long>(counts.errors.load()));
}
