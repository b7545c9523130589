// A plain TCP client on Volley's connection: connect with a deadline, send,
// read the answer, close gracefully; then connect again, which is all a
// reconnect is. (net::ReconnectingClient reconnects by itself, with backoff,
// heartbeats and an outbox: examples/reconnecting_client.cpp.)
// Usage: tcp_client PORT [ROUNDS]   against examples/echo_server, which sends every byte back.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/tcp_connect.hpp>
#include <volley/net/tcp_connection.hpp>

namespace net = volley::net;
using namespace std::chrono_literals;

// What one connection's exchange came to; main() reads it once the loop is done.
struct Exchange {
  std::string sent;
  std::string received;
  std::string ended;  // why the connection closed
};

// The protocol of one connection: send a message once open, take the echo,
// and close once all of it is back; at the close, the deadline is called off.
class EchoCheck final : public net::StreamHandler {
 public:
  EchoCheck(Exchange& exchange, boost::asio::steady_timer& deadline) : exchange_(exchange), deadline_(deadline) {}
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_open(net::TcpConnection& connection) override { connection.send(std::as_bytes(std::span(exchange_.sent))); }
  void on_data(net::TcpConnection& connection, std::size_t n) override {
    exchange_.received.append(reinterpret_cast<const char*>(buffer_.data()), n);
    if (exchange_.received.size() >= exchange_.sent.size())
      connection.close({net::CloseReason::Kind::local_close, "all echoed"});  // flush, FIN, wait for the peer's
  }
  void on_close(net::TcpConnection&, const net::CloseReason& reason) override {
    exchange_.ended = net::to_string(reason.kind);
    deadline_.cancel();
  }

 private:
  Exchange& exchange_;
  boost::asio::steady_timer& deadline_;
  std::array<std::byte, 16 * 1024> buffer_;
};

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PORT [ROUNDS]\n", argv[0]);
    return 2;
  }
  const auto port = static_cast<std::uint16_t>(std::atoi(argv[1]));
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 2;
  boost::asio::io_context loop;
  int good = 0;
  for (int round = 0; round < rounds; ++round) {
    std::error_code error;
    auto socket = net::connect_tcp(loop, "127.0.0.1", port, 2s, error);
    if (error) {
      std::fprintf(stderr, "round %d: cannot connect: %s\n", round, error.message().c_str());
      return 1;
    }
    Exchange exchange;
    exchange.sent = "round " + std::to_string(round) + ": " + std::string(50'000, 'x') + "\n";
    boost::asio::steady_timer deadline(loop, 5s);  // an example must not hang on a server that does not answer
    // A connection is always held by a shared_ptr: its reads and writes in
    // flight hold it too, so it lives until it has finished, however the
    // code that made it lets go.
    auto connection =
        std::make_shared<net::TcpConnection>(std::move(socket), std::make_unique<EchoCheck>(exchange, deadline));
    connection->start();
    deadline.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) connection->abort({net::CloseReason::Kind::local_close, "no echo within 5 s"});
    });
    loop.run();  // until the connection has closed (which calls off the deadline)
    loop.restart();
    const bool echoed = exchange.received == exchange.sent;
    good += echoed ? 1 : 0;
    std::printf("round %d: %zu of %zu bytes echoed%s, then %s\n", round, exchange.received.size(), exchange.sent.size(),
                echoed ? "" : " (NOT THE SAME)", exchange.ended.c_str());
  }
  std::printf("%d of %d rounds echoed\n", good, rounds);
  return good == rounds ? 0 : 1;
}
