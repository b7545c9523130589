// A client that stays connected: heartbeats, reconnection with backoff, and an
// outbox that keeps messages while the server is away (delivered in order,
// exactly once, when it is back).
// Usage: reconnecting_client PORT[,PORT...] [COUNT]   against echo services with
// checked frames, e.g. `volley pingpong-server --framing checked -p PORT`: with
// several ports, the first that answers, and the next when it goes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/reconnecting_client.hpp>

namespace net = volley::net;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT[,PORT...] [COUNT]\n", argv[0]);
    return 2;
  }
  const int count = argc > 2 ? std::atoi(argv[2]) : 100;
  boost::asio::io_context loop;

  net::ReconnectingClientOptions options;
  const std::string ports = argv[1];  // servers on this host
  for (std::size_t at = 0; at <= ports.size();) {
    const std::size_t comma = std::min(ports.find(',', at), ports.size());
    options.servers.push_back("127.0.0.1:" + ports.substr(at, comma - at));
    at = comma + 1;
  }
  options.server_policy = net::ServerPolicy::first;  // in order; round_robin spreads clients
  options.make_codec = [] { return net::make_checked_codec(64 * 1024); };
  options.session.heartbeat_interval = 500ms;  // a silent peer is gone after 3 missed intervals
  options.backoff.initial = 50ms;

  int echoed = 0;
  bool in_order = true;
  boost::asio::steady_timer deadline(loop, 10s);  // an example must not hang
  net::ReconnectingClient client(
      loop, options,
      {.on_open = [] { std::printf("connected\n"); },
       .on_message =
           [&](const net::Message& echo) {
             const std::string text(reinterpret_cast<const char*>(echo.bytes.data()), echo.bytes.size());
             in_order = in_order && text == "message " + std::to_string(echoed);
             if (++echoed == count) {
               client.stop();  // flushes and closes; the loop then runs out of work
               deadline.cancel();
             }
           },
       .on_close = [](const net::CloseReason& r) { std::printf("disconnected: %s\n", net::to_string(r.kind)); },
       .on_connect_failed = [](const std::error_code& error, std::chrono::milliseconds delay) {
         std::printf("connect failed (%s), retrying in %lld ms\n", error.message().c_str(),
                     static_cast<long long>(delay.count()));
       }});
  client.start();

  // Sent before the connection is up: they wait in the outbox, in order.
  for (int i = 0; i < count; ++i) {
    const std::string text = "message " + std::to_string(i);
    const auto result = client.send(std::as_bytes(std::span(text)));
    if (result != net::SendResult::sent && result != net::SendResult::queued)
      std::fprintf(stderr, "message %d refused: %s\n", i, net::to_string(result));
  }

  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (!ec) client.stop();
  });
  loop.run();
  std::printf("echoed %d of %d, %s; connects %llu, failovers %llu, last server %s\n", echoed, count,
              in_order ? "in order" : "OUT OF ORDER", static_cast<unsigned long long>(client.stats().connects),
              static_cast<unsigned long long>(client.stats().failovers), client.server().c_str());
  return echoed == count && in_order ? 0 : 1;
}
