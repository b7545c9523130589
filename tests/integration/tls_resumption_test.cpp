// TLS session resumption: a client that connects again to the same server
// offers the session it was issued and the server takes it (both count it,
// the echo server program in its /metrics and report); a server that cannot
// use it (restarted: new ticket keys) answers with a full handshake, and the
// connection still opens.
#include <array>
#include <chrono>
#include <memory>
#include <span>
#include <string>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/server.hpp>
#include <volley/net/tcp_connect.hpp>
#include <volley/net/tls.hpp>

#include "byte_echo.hpp"
#include "child_process.hpp"
#include "framings.hpp"
#include "links.hpp"
#include "listening_server.hpp"
#include "metrics_scrape.hpp"
#include "run_until.hpp"
#include "server_thread.hpp"
#include "transport_pair.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;

std::shared_ptr<ssl::context> server_context() {
  const auto& c = TestCerts::get();
  return std::make_shared<ssl::context>(net::make_tls_server_context(c.file("server.pem"), c.file("server.key")));
}

std::shared_ptr<ssl::context> client_context(net::TlsVersion version) {
  return std::make_shared<ssl::context>(
      net::make_tls_client_context(TestCerts::get().file("ca.pem"), true, version));
}

// One connection over a socket pair, no event loop: both handshakes stepped
// in turn, then the server sends a few bytes and the client reads them (with
// them, TLS 1.3's tickets, which the server sends after its handshake).
// Returns whether each side says the session was resumed.
struct Outcome {
  bool opened = false;
  bool server_resumed = false;
  bool client_resumed = false;
};

Outcome connect_once(ssl::context& server_ctx, ssl::context& client_ctx,
                     std::shared_ptr<net::TlsSessionCache> sessions) {
  SocketPair sockets;
  const auto server = net::make_tls_transport(server_ctx, net::TlsRole::server);
  const auto client = net::make_tls_transport(client_ctx, net::TlsRole::client, "127.0.0.1", std::move(sessions));
  server->attach(sockets.server());
  client->attach(sockets.client());
  if (!handshake(*client, *server)) return {};
  const std::string hello = "hello";
  const asio::const_buffer out(hello.data(), hello.size());
  boost::system::error_code ec;
  if (server->write_some(std::span(&out, 1), ec) != hello.size()) return {};
  std::array<std::byte, 64> in{};
  std::size_t got = 0;
  for (int step = 0; step < 1000 && got < hello.size(); ++step) got += client->read_some(std::span(in).subspan(got), ec);
  return {.opened = got == hello.size(), .server_resumed = server->resumed_session(),
          .client_resumed = client->resumed_session()};
}

class Resumption : public testing::TestWithParam<net::TlsVersion> {};
INSTANTIATE_TEST_SUITE_P(Versions, Resumption, testing::Values(net::TlsVersion::tls13, net::TlsVersion::tls12),
                         [](const auto& info) { return info.param == net::TlsVersion::tls13 ? "Tls13" : "Tls12"; });

TEST_P(Resumption, AClientWithACacheResumesItsSessionAndOneWithoutDoesNot) {
  const auto server_ctx = server_context();
  const auto client_ctx = client_context(GetParam());
  const auto sessions = std::make_shared<net::TlsSessionCache>();

  const Outcome first = connect_once(*server_ctx, *client_ctx, sessions);
  ASSERT_TRUE(first.opened);
  EXPECT_FALSE(first.server_resumed);
  EXPECT_FALSE(first.client_resumed);
  ASSERT_TRUE(sessions->has_session()) << "the server issued no session the client kept";

  const Outcome second = connect_once(*server_ctx, *client_ctx, sessions);
  ASSERT_TRUE(second.opened);
  EXPECT_TRUE(second.server_resumed);
  EXPECT_TRUE(second.client_resumed);

  const Outcome without = connect_once(*server_ctx, *client_ctx, nullptr);
  ASSERT_TRUE(without.opened);
  EXPECT_FALSE(without.server_resumed);

  sessions->clear();
  const Outcome cleared = connect_once(*server_ctx, *client_ctx, sessions);
  ASSERT_TRUE(cleared.opened);
  EXPECT_FALSE(cleared.server_resumed);
}

// A restarted server has new ticket keys (and an empty session cache): it
// cannot read the ticket the client offers, does a full handshake instead,
// and the client keeps the session this server issues, which resumes next.
TEST_P(Resumption, ASessionARestartedServerCannotUseFallsBackToAFullHandshake) {
  const auto client_ctx = client_context(GetParam());
  const auto sessions = std::make_shared<net::TlsSessionCache>();
  {
    const auto before_restart = server_context();
    ASSERT_TRUE(connect_once(*before_restart, *client_ctx, sessions).opened);
    ASSERT_TRUE(sessions->has_session());
  }
  const auto restarted = server_context();
  const Outcome offered = connect_once(*restarted, *client_ctx, sessions);
  ASSERT_TRUE(offered.opened) << "a refused ticket must not fail the connection";
  EXPECT_FALSE(offered.server_resumed);
  EXPECT_FALSE(offered.client_resumed);
  const Outcome again = connect_once(*restarted, *client_ctx, sessions);
  ASSERT_TRUE(again.opened);
  EXPECT_TRUE(again.server_resumed);
}

// Echoes every byte of a checked frame as it came (a codec that frames nothing
// would do too): the client's session only needs its messages back.
class EchoServer {
 public:
  explicit EchoServer(std::shared_ptr<ssl::context> context, std::uint16_t port = 0)
      : context_(std::move(context)),
        server_({.bind = "127.0.0.1", .port = port, .threads = 1, .handle_signals = false, .shutdown_timeout = 200ms,
                 .transport = [ctx = context_] { return net::make_tls_transport(*ctx, net::TlsRole::server); }}) {
    server_.listen([](std::size_t) { return std::make_unique<ByteEcho<4096>>(); });
    running_ = std::make_unique<ServerThread>(server_);
  }
  net::Server& server() { return server_; }

 private:
  std::shared_ptr<ssl::context> context_;
  net::Server server_;
  std::unique_ptr<ServerThread> running_;  // last: stopped first
};

// A ReconnectingClient on make_resuming_tls_transports: its connection is cut
// after the first echo; the reconnect resumes, and the client and the server
// count it. The server is then restarted on the same port: the next
// reconnect offers the old ticket, is refused it, and opens on a full handshake.
TEST(TlsResumption, AReconnectingClientResumesAfterALostConnectionAndNotAfterAServerRestart) {
  auto echo = std::make_unique<EchoServer>(server_context());
  const std::uint16_t port = echo->server().port();
  const auto client_ctx = client_context(net::TlsVersion::any);
  asio::io_context loop;
  net::ReconnectingClientOptions o;
  o.port = port;
  o.make_codec = [] { return make_codec(Framing::checked); };
  o.make_transport = net::make_resuming_tls_transports(*client_ctx, "127.0.0.1");
  o.backoff.initial = 10ms;
  o.backoff.maximum = 50ms;
  int messages = 0;
  net::ReconnectingClient client(loop, o, {.on_message = [&](const net::Message&) { ++messages; }});
  client.start();

  // Sends one message on the current connection and waits for its echo (the
  // ticket, sent right after the handshake, is read before it).
  const std::array<std::byte, 8> payload{};
  const auto exchange = [&](int expected) {
    EXPECT_TRUE(run_until(loop, [&] { return client.connected(); }, 10s));
    client.send(payload);
    return run_until(loop, [&] { return messages >= expected; }, 10s);
  };
  const auto cut = [&] {
    client.session()->connection()->abort({net::CloseReason::Kind::local_close, "cut by the test"});
    return run_until(loop, [&] { return client.stats().connects >= client.stats().disconnects + 1 &&
                                        client.connected(); }, 10s);
  };
  ASSERT_TRUE(exchange(1));
  EXPECT_EQ(client.stats().resumed_connects, 0u);
  ASSERT_TRUE(cut());
  ASSERT_TRUE(exchange(2));
  EXPECT_EQ(client.stats().connects, 2u);
  EXPECT_EQ(client.stats().resumed_connects, 1u);
  EXPECT_EQ(echo->server().handshakes(), 2u);
  EXPECT_EQ(echo->server().resumed_handshakes(), 1u);

  echo.reset();  // the server goes; the client retries until one is back on the port
  echo = std::make_unique<EchoServer>(server_context(), port);
  ASSERT_TRUE(run_until(loop, [&] { return client.stats().connects == 3 && client.connected(); }, 10s));
  ASSERT_TRUE(exchange(3));
  EXPECT_EQ(client.stats().resumed_connects, 1u) << "a restarted server cannot have resumed the old session";
  EXPECT_EQ(echo->server().handshakes(), 1u);
  EXPECT_EQ(echo->server().resumed_handshakes(), 0u);
  client.stop();
}

// Sends a greeting once open and closes when it is back.
class Greeting final : public net::StreamHandler {
 public:
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_open(net::TcpConnection& c) override { c.send(std::as_bytes(std::span(kText, sizeof kText - 1))); }
  void on_data(net::TcpConnection& c, std::size_t n) override {
    got_ += n;
    if (got_ >= sizeof kText - 1) {
      echoed = true;
      c.close({net::CloseReason::Kind::local_close, "echoed"});
    }
  }
  void on_close(net::TcpConnection&, const net::CloseReason&) override { closed = true; }

  bool echoed = false;
  bool closed = false;

 private:
  static constexpr char kText[] = "hello over TLS";
  std::array<std::byte, 256> buffer_{};
  std::size_t got_ = 0;
};

// One connection through `sessions`: greeted, echoed, closed.
bool greet_once(std::uint16_t port, ssl::context& context, std::shared_ptr<net::TlsSessionCache> sessions) {
  asio::io_context loop;
  std::error_code error;
  auto socket = net::connect_tcp(loop, "127.0.0.1", port, 5s, error);
  if (error) return false;
  auto handler = std::make_unique<Greeting>();
  Greeting& greeting = *handler;
  auto connection = std::make_shared<net::TcpConnection>(
      std::move(socket), std::move(handler), net::ConnectionLimits{},
      net::make_tls_transport(context, net::TlsRole::client, "127.0.0.1", std::move(sessions)));
  connection->start();
  return run_until(loop, [&] { return greeting.closed; }, 10s) && greeting.echoed;
}

// The echo server program counts the resumed handshake where an operator
// looks: /metrics while it runs, and its final report.
TEST(TlsResumption, TheEchoServerCountsResumedHandshakesInItsMetricsAndReport) {
  TempDir dir;
  const auto& certs = TestCerts::get();
  ListeningServer server(dir, {"echo-server", "--proto", "tls", "--cert", certs.file("server.pem"), "--key",
                               certs.file("server.key"), "-p", "0", "-t", "1", "--no-progress", "--json",
                               "--metrics", "127.0.0.1:0"},
                         "echo-server");
  const int mport = metrics_port(server.process());
  ASSERT_GT(mport, 0);
  const auto client_ctx = client_context(net::TlsVersion::any);
  const auto sessions = std::make_shared<net::TlsSessionCache>();
  ASSERT_TRUE(greet_once(server.port(), *client_ctx, sessions));
  ASSERT_TRUE(greet_once(server.port(), *client_ctx, sessions));
  ASSERT_TRUE(greet_once(server.port(), *client_ctx, nullptr));
  // The server counts a handshake when it finishes on its side, which may be
  // after the client has its echo: wait for the counts rather than read them once.
  EXPECT_TRUE(wait_for_metric(mport, "volley_handshakes_total", [](double n) { return n == 3; }, 20s));
  EXPECT_TRUE(wait_for_metric(mport, "volley_tls_resumed_handshakes_total", [](double n) { return n == 1; }, 20s));
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "handshakes"), 3u);
  EXPECT_EQ(json_u64(report, "resumed_handshakes"), 1u);
}

}  // namespace
}  // namespace volley::test
