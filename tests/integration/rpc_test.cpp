// RPC over real loopback sockets, server and clients in this process.
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <volley/net/server.hpp>
#include <volley/rpc/client.hpp>
#include <volley/rpc/server.hpp>
#include "benchmark_messages.hpp"
#include "server_thread.hpp"
#include "run_until.hpp"

using namespace volley;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

constexpr std::uint32_t kPing = 1, kPong = 2, kRequest = 3, kReply = 4, kBoom = 5, kSlow = 7;

// A server on its own threads: accept loop plus two workers.
class TestServer {
 public:
  TestServer() {
    rpc_.handle<benchmarks::Ping, benchmarks::Pong>(kPing, kPong, [](const benchmarks::Ping& p) { return benchmarks::answer(p); });
    rpc_.handle<benchmarks::Request, benchmarks::Reply>(kRequest, kReply,
                                                [](const benchmarks::Request& r) { return benchmarks::answer(r); });
    rpc_.handle<benchmarks::Ping, benchmarks::Pong>(kBoom, kPong, [](const benchmarks::Ping&) -> benchmarks::Pong {
      throw std::runtime_error("boom on purpose");
    });
    rpc_.handle<benchmarks::Ping, benchmarks::Pong>(kSlow, kPong, [](const benchmarks::Ping& p) {
      std::this_thread::sleep_for(300ms);
      return benchmarks::answer(p);
    });
    server_.listen([this](std::size_t) { return rpc_.make_stream_handler(); });
    port_ = server_.port();
    running_ = std::make_unique<test::ServerThread>(server_);
  }
  std::uint16_t port() const { return port_; }

 private:
  rpc::RpcServer rpc_;
  net::Server server_{{.bind = "127.0.0.1", .port = 0, .threads = 2, .handle_signals = false}};
  std::uint16_t port_ = 0;
  std::unique_ptr<test::ServerThread> running_;  // declared last: stopped first
};

std::error_code connect(rpc::RpcClient& client, std::uint16_t port) {
  std::error_code ec;
  client.connect("127.0.0.1", port, 5s, ec);
  return ec;
}

benchmarks::Request request_for(int client, int i) {
  return {"client " + std::to_string(client) + " call " + std::to_string(i) + std::string(static_cast<std::size_t>(i % 50), '.'),
          i * 0.5, static_cast<std::int8_t>(i), static_cast<std::int16_t>(client), i * 1000 + client};
}

}  // namespace

TEST(Rpc, ManyConcurrentCallsFromSeveralClientsAreEachMatchedToTheirRequest) {
  TestServer server;
  asio::io_context loop(1);
  constexpr int kClients = 4, kCalls = 3000;
  std::vector<std::unique_ptr<rpc::RpcClient>> clients;
  int completed = 0, wrong = 0;
  for (int c = 0; c < kClients; ++c) {
    clients.push_back(std::make_unique<rpc::RpcClient>(loop));
    const auto ec = connect(*clients.back(), server.port());
    ASSERT_FALSE(ec) << ec.message();
  }
  for (int c = 0; c < kClients; ++c) {
    for (int i = 0; i < kCalls; ++i) {  // all in flight at once on each connection
      const auto req = request_for(c, i);
      clients[c]->call<benchmarks::Reply>(kRequest, kReply, req, 20s, [&, req](const std::error_code& ec, benchmarks::Reply r) {
        if (ec || !(r == benchmarks::answer(req))) ++wrong;
        if (++completed == kClients * kCalls) loop.stop();
      });
    }
  }
  asio::steady_timer guard(loop, 30s);
  guard.async_wait([&](auto) { loop.stop(); });
  loop.run();
  EXPECT_EQ(completed, kClients * kCalls);
  EXPECT_EQ(wrong, 0);
  for (auto& c : clients) EXPECT_EQ(c->pending(), 0u);
}

TEST(Rpc, ErrorsComeBackAsErrorRepliesNotSilence) {
  TestServer server;
  asio::io_context loop(1);
  rpc::RpcClient client(loop);
  ASSERT_FALSE(connect(client, server.port()));
  std::vector<std::error_code> results;
  std::string boom_message;
  client.call<benchmarks::Pong>(99, kPong, benchmarks::Ping{1}, 5s, [&](const auto& e, benchmarks::Pong) { results.push_back(e); });
  client.call<benchmarks::Pong>(kBoom, kPong, benchmarks::Ping{1}, 5s, [&](const auto& e, benchmarks::Pong) {
    results.push_back(e);
    boom_message = client.last_remote_error();
  });
  client.call<benchmarks::Reply>(kRequest, kReply, benchmarks::Ping{1}, 5s, [&](const auto& e, benchmarks::Reply) { results.push_back(e); });
  client.call<benchmarks::Reply>(kPing, kReply, benchmarks::Ping{1}, 5s, [&](const auto& e, benchmarks::Reply) { results.push_back(e); });
  client.call<benchmarks::Pong>(kPing, kPong, benchmarks::Ping{7}, 5s, [&](const auto& e, benchmarks::Pong p) {
    results.push_back(e);
    EXPECT_EQ(p, (benchmarks::Pong{-7, 7, 'X'}));
    loop.stop();
  });
  test::run_bounded(loop, 10s);
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(results[0], rpc::ClientErrc::unknown_message_id);
  EXPECT_EQ(results[1], rpc::ClientErrc::handler_failed);
  EXPECT_NE(boom_message.find("boom on purpose"), std::string::npos) << boom_message;
  EXPECT_EQ(results[2], rpc::ClientErrc::bad_request);  // a Ping body is not a Request
  EXPECT_EQ(results[3], rpc::ClientErrc::bad_reply);    // a Pong (id 2) where a Reply (id 4) was expected
  EXPECT_FALSE(results[4]);                              // and the connection is still good
}

TEST(Rpc, ATimeoutFailsOnlyThatCall) {
  TestServer server;
  asio::io_context loop(1);
  rpc::RpcClient client(loop);
  ASSERT_FALSE(connect(client, server.port()));
  std::error_code slow_result, later_result = rpc::ClientErrc::not_connected;
  client.call<benchmarks::Pong>(kSlow, kPong, benchmarks::Ping{1}, 50ms, [&](const auto& e, benchmarks::Pong) {
    slow_result = e;
    // The connection and the other calls go on.
    client.call<benchmarks::Pong>(kPing, kPong, benchmarks::Ping{2}, 5s, [&](const auto& e2, benchmarks::Pong) {
      later_result = e2;
      loop.stop();
    });
  });
  test::run_bounded(loop, 10s);
  EXPECT_EQ(slow_result, rpc::ClientErrc::timed_out);
  EXPECT_FALSE(later_result) << later_result.message();
}

TEST(Rpc, AServerThatDiesFailsPendingCallsInsteadOfHangingThem) {
  asio::io_context loop(1);
  // A "server" that reads the requests and then vanishes without answering.
  asio::ip::tcp::acceptor acceptor(loop, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  asio::ip::tcp::socket peer(loop);
  std::array<std::byte, 64> sink{};
  acceptor.async_accept(peer, [&](const boost::system::error_code&) {
    asio::async_read(peer, asio::buffer(sink), [&](const boost::system::error_code&, std::size_t) { peer.close(); });
  });
  rpc::RpcClient client(loop);
  std::error_code ec;
  client.connect("127.0.0.1", acceptor.local_endpoint().port(), 5s, ec);
  ASSERT_FALSE(ec);
  int failed = 0;
  for (int i = 0; i < 10; ++i)
    client.call<benchmarks::Pong>(kPing, kPong, benchmarks::Ping{i}, 30s, [&](const auto& e, benchmarks::Pong) {
      if (e == rpc::ClientErrc::connection_closed) ++failed;
      if (failed == 10) loop.stop();
    });
  test::run_bounded(loop, 10s);
  EXPECT_EQ(failed, 10);
  EXPECT_EQ(client.pending(), 0u);
  // And a call on the dead client fails at once, clearly.
  std::error_code after;
  client.call<benchmarks::Pong>(kPing, kPong, benchmarks::Ping{1}, 1s, [&](const auto& e, benchmarks::Pong) { after = e; });
  loop.restart();
  test::run_bounded(loop, 1s);
  EXPECT_EQ(after, rpc::ClientErrc::not_connected);
}

TEST(Rpc, CoroutinesAwaitCallsAndSequencesWrapAround) {
  TestServer server;
  asio::io_context loop(1);
  rpc::RpcClient client(loop, 0xFFFFFFF0u);  // wraps after 16 calls
  ASSERT_FALSE(connect(client, server.port()));
  int good = 0;
  bool threw = false;
  asio::co_spawn(
      loop,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < 100; ++i) {
          const benchmarks::Pong pong = co_await client.async_call<benchmarks::Pong>(kPing, kPong, benchmarks::Ping{i}, 5s, asio::use_awaitable);
          if (pong == benchmarks::answer(benchmarks::Ping{i})) ++good;
        }
        try {
          co_await client.async_call<benchmarks::Pong>(kBoom, kPong, benchmarks::Ping{0}, 5s, asio::use_awaitable);
        } catch (const boost::system::system_error& e) {
          threw = std::error_code(e.code()) == rpc::ClientErrc::handler_failed;  // the std::error_code it carried
        }
        loop.stop();
      },
      asio::detached);
  test::run_bounded(loop, 20s);
  EXPECT_EQ(good, 100);
  EXPECT_TRUE(threw);
}

#include "child_process.hpp"
#include "target_fixture.hpp"

// The port an rpc-server wrote to its --port file ("" if it never did within 10 s).
static std::string wait_for_port_file(const std::string& path) {
  std::string port;
  for (int i = 0; i < 1000 && port.empty(); ++i) {
    port = volley::test::read_file(path);
    if (port.empty()) std::this_thread::sleep_for(10ms);
  }
  if (!port.empty()) port.erase(port.find_last_not_of('\n') + 1);
  return port;
}

TEST(RpcTools, ServerAndBenchReportTheSeedLinesAndJson) {
  using namespace volley::test;
  TempDir dir;
  ChildProcess server({bin("volley"), "rpc-server", "--port", "0", "--port-file", dir.file("port"), "--json"},
                      dir.file("server"));
  const std::string port = wait_for_port_file(dir.file("port"));
  ASSERT_FALSE(port.empty());
  ChildProcess text({bin("volley"), "rpc-bench", "--port", port, "--seconds", "0.5", "--in-flight", "8",
                     "--string-length", "100000"},
                    dir.file("text"));
  ASSERT_EQ(text.wait_for(60s).value_or(-1), 0) << text.stderr_text();
  for (const char* line : {"ping - pong round trip count:", "ping - pong round trip avg:", "ping - pong serialization avg:",
                           "request - reply round trip total:", "request - reply serialization count:", "p50 / p99 / max"})
    EXPECT_NE(text.stdout_text().find(line), std::string::npos) << line;
  ChildProcess json({bin("volley"), "rpc-bench", "--port", port, "--seconds", "0.3", "--mode", "request", "--json"},
                    dir.file("json"));
  ASSERT_EQ(json.wait_for(60s).value_or(-1), 0) << json.stderr_text();
  const auto report = boost::json::parse(json.stdout_text()).as_object();
  const auto& result = report.at("results").at(0).as_object();
  EXPECT_GT(u64(result.at("round_trips")), 100u);
  EXPECT_EQ(result.at("error").as_string(), "");
  server.send_signal(SIGTERM);
  ASSERT_EQ(server.wait_for(20s).value_or(-1), 0);
  EXPECT_GT(u64(boost::json::parse(report_text(server.stdout_text())).as_object().at("calls")), 100u);
  ChildProcess refused({bin("volley"), "rpc-bench", "--port", port, "--seconds", "0.2"}, dir.file("refused"));
  EXPECT_EQ(refused.wait_for(20s).value_or(-1), 1);
  EXPECT_NE(refused.stdout_text().find("cannot connect"), std::string::npos) << refused.stdout_text();
}

#include <volley/wire/byte_order.hpp>

#include "raw_client.hpp"

// What a client does wrong is answered and counted in the server's report:
// an unknown id and an undecodable body get error replies (the session goes
// on), a size over the maximum closes the session after the replies before it.
TEST(RpcTools, TheServerCountsErrorRepliesProtocolErrorsAndHowSessionsEnded) {
  using namespace volley::test;
  TempDir dir;
  ChildProcess server({bin("volley"), "rpc-server", "--bind", "127.0.0.1", "--port", "0", "--port-file",
                       dir.file("port"), "--json"},
                      dir.file("server"));
  const std::string port = wait_for_port_file(dir.file("port"));
  ASSERT_FALSE(port.empty());
  const auto frame = [](std::uint32_t sequence, std::uint32_t id, std::vector<std::byte> body) {
    std::vector<std::byte> f(rpc::kHeaderSize);
    rpc::write_header(f.data(), sequence, static_cast<std::uint32_t>(body.size()), id);
    f.insert(f.end(), body.begin(), body.end());
    return f;
  };
  {
    RawClient c(std::stoi(port));
    c.send(frame(1, 77, {}));                      // no handler for id 77
    c.send(frame(2, 1, {std::byte{1}}));           // Ping needs 8 bytes: does not decode
    auto oversize = frame(3, 1, {});
    volley::wire::store_u32_be(oversize.data() + 4, 0x7FFFFFFF);  // a size over the 1 MiB maximum
    c.send(oversize);
    // Both error replies arrive, then the end of the session.
    const auto replies = c.read(1 << 16);  // up to the close
    std::vector<std::uint32_t> sequences;
    for (std::size_t at = 0; at + rpc::kHeaderSize <= replies.size();) {
      sequences.push_back(volley::wire::load_u32_be(replies.data() + at));
      EXPECT_EQ(volley::wire::load_u32_be(replies.data() + at + 8), rpc::kErrorMessageId);
      at += rpc::kHeaderSize + volley::wire::load_u32_be(replies.data() + at + 4);
    }
    EXPECT_EQ(sequences, (std::vector<std::uint32_t>{1, 2}));
    EXPECT_TRUE(c.peer_closed());
  }
  server.send_signal(SIGTERM);
  ASSERT_EQ(server.wait_for(20s).value_or(-1), 0) << server.stderr_text();
  const auto report = boost::json::parse(report_text(server.stdout_text())).as_object();
  EXPECT_EQ(u64(report.at("sessions")), 1u);
  EXPECT_EQ(u64(report.at("requests")), 2u);
  EXPECT_EQ(u64(report.at("error_replies")), 2u);
  EXPECT_EQ(u64(report.at("calls")), 0u);
  EXPECT_EQ(u64(report.at("protocol_errors")), 1u);
  EXPECT_EQ(u64(report.at("closes").at("protocol error")), 1u);
}
