// A gNB service: typed handlers per message type, control messages acknowledged.
// Usage: gnb_service [PORT]   then point `traffic_generator --port PORT` at it.
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include <volley/dispatch/views.hpp>
#include <volley/net/gnb_session.hpp>
#include <volley/net/server.hpp>

namespace net = volley::net;
namespace gnb = volley::wire::gnb;
using namespace volley::dispatch;

struct Counts {
  std::atomic<std::uint64_t> control{0}, data{0}, other{0}, errors{0};
};

// One per connection, called for each decoded frame; nothing here allocates.
class GnbHandlers {
 public:
  explicit GnbHandlers(Counts& counts) : counts_(counts) {}

  void on_frame(net::TcpConnection& c, const gnb::Frame& frame) {
    dispatch(frame, Overloaded{
                        [&](const ControlView& m) {
                          counts_.control.fetch_add(1, std::memory_order_relaxed);
                          const auto ack = gnb::make_ack_frame({m.transaction_id});
                          c.send(ack);
                        },
                        [&](const DataView&) { counts_.data.fetch_add(1, std::memory_order_relaxed); },
                        [&](const auto&) { counts_.other.fetch_add(1, std::memory_order_relaxed); },
                    });
  }
  // An oversize or undersize body: the frame is skipped, the stream stays in sync.
  void on_rejected(net::TcpConnection&, const gnb::DecodeResult&) { counts_.errors.fetch_add(1); }
  // An unknown type or impossible length: the connection closes after this.
  void on_failed(net::TcpConnection&, const gnb::DecodeResult& r) {
    counts_.errors.fetch_add(1);
    std::fprintf(stderr, "closing a connection: %s\n", r.error.message().c_str());
  }
  void on_close(net::TcpConnection&, const net::CloseReason&, std::size_t /*partial_bytes*/) {}
  void on_written(net::TcpConnection&, std::size_t) {}

 private:
  Counts& counts_;
};

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 0);
  Counts counts;
  net::Server server({.bind = "127.0.0.1", .port = port, .threads = 2});
  server.listen([&](std::size_t) { return std::make_unique<net::GnbStreamHandler<GnbHandlers>>(counts); });
  server.on_ready([&] {
    std::printf("listening tcp 127.0.0.1:%u\n", server.port());
    std::fflush(stdout);
  });
  server.run();
  std::printf("control %llu (acked), data %llu, other %llu, errors %llu\n",
              static_cast<unsigned long long>(counts.control.load()), static_cast<unsigned long long>(counts.data.load()),
              static_cast<unsigned long long>(counts.other.load()), static_cast<unsigned long long>(counts.errors.load()));
}
