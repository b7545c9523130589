// An order-entry gateway with your own message types: each checked-frame
// payload is [u8 message id][the struct, encoded by volley::serial], and a
// Dispatcher hands every message to the handler of its type, already decoded
// into that struct. One program: the gateway on a worker loop, a trading
// client on the main thread that sends orders and cancels and reads the
// gateway's answers through a dispatcher of its own.
// Once warm, neither side allocates per message: each handler's struct is
// decoded into again and again, and answers are encoded into a stack buffer.
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/dispatch/dispatcher.hpp>
#include <volley/net/reconnecting_client.hpp>
#include <volley/net/server.hpp>
#include <volley/net/session.hpp>
#include <volley/serial/binary.hpp>

namespace net = volley::net;
using namespace std::chrono_literals;

// The messages: plain structs, no macros, no generated code.
enum class Side : std::uint8_t { buy, sell };
template <>
struct volley::serial::EnumRange<Side> {  // a side outside this range fails to decode
  static constexpr auto min = 0, max = 1;
};
struct NewOrder {
  std::uint64_t order_id;
  std::string symbol;
  Side side;
  std::int64_t price_ticks;
  std::uint32_t quantity;
};
struct CancelOrder {
  std::uint64_t order_id;
};
struct Accepted {
  std::uint64_t order_id;
};
struct Rejected {
  std::uint64_t order_id;
  std::string reason;
};
enum : std::uint8_t { kNewOrder = 1, kCancelOrder = 2, kAccepted = 3, kRejected = 4 };

using Handlers = volley::dispatch::Dispatcher<volley::dispatch::LeadingId<std::uint8_t>, net::Session>;

// [id][struct] into a stack buffer; the session copies it into its write queue.
template <class Message, class Sender>
void send_message(Sender& to, std::uint8_t id, const Message& message) {
  std::array<std::byte, 256> buffer;
  buffer[0] = std::byte{id};
  const std::size_t n = volley::serial::encode(message, std::span(buffer).subspan(1));
  to.send(std::span(buffer).first(1 + n));
}

// One per connection, on the connection's loop.
class Gateway final : public net::SessionEvents {
 public:
  Gateway() {
    handlers_.on<NewOrder>(kNewOrder, [](net::Session& s, const NewOrder& o) {
      if (o.quantity == 0 || o.price_ticks <= 0)
        return send_message(s, kRejected, Rejected{o.order_id, "quantity and price must be positive"});
      if (o.symbol.empty() || o.symbol.size() > 8)
        return send_message(s, kRejected, Rejected{o.order_id, "unknown symbol"});
      send_message(s, kAccepted, Accepted{o.order_id});
    });
    handlers_.on<CancelOrder>(kCancelOrder, [](net::Session& s, const CancelOrder& c) {
      send_message(s, kAccepted, Accepted{c.order_id});
    });
  }

  void on_message(net::Session& s, const net::Message& payload) override {
    // Unknown ids and bodies that do not decode are counted by the dispatcher
    // and answered here: a gateway tells its client what it did not take.
    if (handlers_.dispatch(payload, s) != volley::dispatch::Outcome::handled)
      send_message(s, kRejected, Rejected{0, "not a message this gateway takes"});
  }
  void on_close(net::Session&, const net::CloseReason&) override {
    const auto& st = handlers_.stats();
    std::printf("gateway: handled %llu, unknown %llu, undecodable %llu\n", static_cast<unsigned long long>(st.handled),
                static_cast<unsigned long long>(st.unknown_id), static_cast<unsigned long long>(st.undecodable));
  }

 private:
  Handlers handlers_;
};

int main() {
  net::Server server({.bind = "127.0.0.1", .port = 0, .threads = 1, .handle_signals = false});
  server.listen([](std::size_t) {
    return std::make_unique<net::Session>(net::make_checked_codec(64 * 1024), net::SessionOptions{},
                                          std::make_unique<Gateway>());
  });
  const std::uint16_t port = server.port();
  std::thread gateway_thread([&] { server.run(); });

  boost::asio::io_context loop;
  net::ReconnectingClientOptions options;
  options.port = port;
  options.make_codec = [] { return net::make_checked_codec(64 * 1024); };
  constexpr std::uint64_t kOrders = 1000;
  std::uint64_t accepted = 0, rejected = 0;
  std::string last_reason;
  // The client's side of the protocol, dispatched the same way (no session context here).
  volley::dispatch::Dispatcher<volley::dispatch::LeadingId<std::uint8_t>> answers;
  answers.on<Accepted>(kAccepted, [&](const Accepted&) { ++accepted; });
  answers.on<Rejected>(kRejected, [&](const Rejected& r) {
    ++rejected;
    last_reason = r.reason;
  });
  const std::uint64_t expected = kOrders + 2;  // every order and both cancels
  boost::asio::steady_timer deadline(loop, 10s);  // an example must not hang
  net::ReconnectingClient client(
      loop, options,
      {.on_open = [] { std::printf("client: connected\n"); },
       .on_message =
           [&](const net::Message& payload) {
             answers.dispatch(payload);
             if (accepted + rejected == expected) {
               client.stop();  // flushes and closes; the loop then runs out of work
               deadline.cancel();
             }
           },
       .on_close = [](const net::CloseReason& r) { std::printf("client: disconnected (%s)\n", net::to_string(r.kind)); },
       .on_connect_failed = [](const std::error_code& error, std::chrono::milliseconds) {
         std::printf("client: connect failed (%s), retrying\n", error.message().c_str());
       }});
  client.start();
  // Queued in the client's outbox until the connection is up, then sent in order.
  for (std::uint64_t id = 1; id <= kOrders; ++id) {
    // Every hundredth order has no quantity: the gateway rejects it.
    const std::uint32_t quantity = id % 100 == 0 ? 0 : static_cast<std::uint32_t>(id % 7 + 1);
    send_message(client, kNewOrder, NewOrder{id, "VOLY", id % 2 ? Side::buy : Side::sell, 10'000, quantity});
  }
  send_message(client, kCancelOrder, CancelOrder{1});
  send_message(client, kCancelOrder, CancelOrder{2});
  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (!ec) client.stop();
  });
  loop.run();
  server.stop();
  gateway_thread.join();
  std::printf("client: %llu accepted, %llu rejected (%s) of %llu sent\n", static_cast<unsigned long long>(accepted),
              static_cast<unsigned long long>(rejected), last_reason.c_str(),
              static_cast<unsigned long long>(expected));
  return accepted + rejected == expected ? 0 : 1;
}
