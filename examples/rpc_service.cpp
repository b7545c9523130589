// Request/reply RPC with your own message structs: a server answering price
// quotes and a client calling it, in one program.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/server.hpp>
#include <volley/rpc/client.hpp>
#include <volley/rpc/server.hpp>

// Plain structs: volley::serial encodes their fields by reflection, no macros.
struct QuoteRequest {
  std::string symbol;
  std::uint32_t quantity;
};
struct Quote {
  std::string symbol;
  std::int64_t price_ticks;
  std::uint32_t quantity;
};
enum : std::uint32_t { kQuoteRequest = 10, kQuote = 11 };  // message ids on the wire

int main() {
  volley::rpc::RpcServer rpc;  // handlers first: worker loops read the table without locks
  rpc.handle<QuoteRequest, Quote>(kQuoteRequest, kQuote, [](const QuoteRequest& r) {
    return Quote{r.symbol, static_cast<std::int64_t>(10'000 + r.symbol.size()), r.quantity};
  });
  volley::net::Server server({.bind = "127.0.0.1", .port = 0, .threads = 1, .handle_signals = false});
  server.listen([&](std::size_t) { return rpc.make_stream_handler(); });
  const std::uint16_t port = server.port();
  std::thread server_thread([&] { server.run(); });

  boost::asio::io_context loop;
  volley::rpc::RpcClient client(loop);
  std::error_code ec;
  client.connect("127.0.0.1", port, std::chrono::seconds(2), ec);
  if (ec) {
    std::fprintf(stderr, "connect: %s\n", ec.message().c_str());
    server.stop();
    server_thread.join();
    return 1;
  }
  int answered = 0;
  const std::vector<std::string> symbols{"ACME", "VOLY", "GNB5"};
  for (const auto& symbol : symbols) {
    client.call<Quote>(kQuoteRequest, kQuote, QuoteRequest{symbol, 100}, std::chrono::seconds(2),
                       [&](const std::error_code& error, Quote q) {
                         if (error) return (void)std::printf("%s: %s\n", symbol.c_str(), error.message().c_str());
                         std::printf("%s x%u at %lld ticks\n", q.symbol.c_str(), q.quantity,
                                     static_cast<long long>(q.price_ticks));
                         if (++answered == static_cast<int>(symbols.size())) client.close();
                       });
  }
  loop.run_for(std::chrono::seconds(5));  // the calls run concurrently on one connection

  // A client that rides out server restarts: start() instead of connect().
  volley::rpc::RpcClient resilient(loop);
  volley::net::ReconnectingClientOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  resilient.start(options, volley::rpc::InFlightPolicy::replay);
  bool resilient_answered = false;
  resilient.call<Quote>(kQuoteRequest, kQuote, QuoteRequest{"RSLT", 5}, std::chrono::seconds(2),
                        [&](const std::error_code& error, Quote q) {
                          resilient_answered = !error && q.quantity == 5;
                          resilient.close();
                        });
  loop.restart();
  loop.run_for(std::chrono::seconds(5));

  server.stop();
  server_thread.join();
  std::printf("%d of %zu quotes answered; the reconnecting client's call: %s\n", answered, symbols.size(),
              resilient_answered ? "answered" : "failed");
  return answered == static_cast<int>(symbols.size()) && resilient_answered ? 0 : 1;
}
