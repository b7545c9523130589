// The examples in examples/ run as a user would run them, and do what their
// comments say.
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <gtest/gtest.h>

#include <volley/wire/byte_order.hpp>
#include <volley/gnb/protocol.hpp>

#include "child_process.hpp"
#include "example_server.hpp"
#include "http_client.hpp"
#include "listening_server.hpp"
#include "raw_client.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;

// Runs an example that ends by itself; returns its exit code and stdout.
std::pair<int, std::string> run_to_end(const TempDir& dir, std::vector<std::string> argv, const std::string& name) {
  argv[0] = bin(argv[0]);
  ChildProcess p(argv, dir.file(name));
  const auto code = p.wait_for(60s);
  EXPECT_TRUE(code.has_value()) << name << " did not finish";
  return {code.value_or(-1), p.stdout_text() + p.stderr_text()};
}

TEST(Examples, EchoServerSendsEveryByteBackAndStopsOnCtrlC) {
  TempDir dir;
  ExampleServer server(dir, "echo_server");
  ASSERT_GT(server.port(), 0);
  {
    RawClient client(server.port());
    std::vector<std::byte> message(100'000);
    for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<std::byte>(i * 7);
    client.send(message);
    EXPECT_EQ(client.read(message.size()), message);
  }
  const auto [code, out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("stopped"), std::string::npos) << out;
}

TEST(Examples, GnbServiceAcksEachControlMessageByItsTransactionId) {
  TempDir dir;
  ExampleServer server(dir, "gnb_service");
  ASSERT_GT(server.port(), 0);
  {
    RawClient client(server.port());
    std::vector<std::byte> stream;
    for (std::uint32_t id : {7u, 8u, 9u}) {
      std::array<std::byte, 64> control{};
      wire::store_u32_be(control.data(), id);
      std::array<std::byte, gnb::kHeaderSize + 64> frame{};
      const auto n = gnb::encode_frame(gnb::MessageType::control, control, frame);
      stream.insert(stream.end(), frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(n));
      std::array<std::byte, gnb::kHeaderSize + 1200> data{};
      const auto m = gnb::encode_frame(gnb::MessageType::data, std::vector<std::byte>(1200), data);
      stream.insert(stream.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(m));
    }
    client.send(stream);
    for (std::uint32_t id : {7u, 8u, 9u}) {
      const auto ack = client.read(gnb::kAckFrameSize);
      ASSERT_EQ(ack.size(), gnb::kAckFrameSize);
      const auto expected = gnb::make_ack_frame({id});
      EXPECT_TRUE(std::equal(ack.begin(), ack.end(), expected.begin())) << "ack for " << id;
    }
  }
  const auto [code, out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("control 3 (acked), data 3, other 0, errors 0"), std::string::npos) << out;
}

TEST(Examples, TcpClientGetsItsBytesBackOnEachOfTwoConnections) {
  TempDir dir;
  ExampleServer server(dir, "echo_server");
  ASSERT_GT(server.port(), 0);
  const auto [code, out] = run_to_end(dir, {"tcp_client", std::to_string(server.port()), "2"}, "client");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("round 1: 50010 of 50010 bytes echoed, then closed locally"), std::string::npos) << out;
  EXPECT_NE(out.find("2 of 2 rounds echoed"), std::string::npos) << out;
  EXPECT_EQ(server.stop().first, 0);
}

TEST(Examples, MetricsServerCountsWhatItEchoedOnEveryWorker) {
  TempDir dir;
  ExampleServer server(dir, "metrics_server");
  ASSERT_GT(server.port(), 0);
  const std::string out = server.output();
  const auto at = out.find("metrics http 127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << out;
  const int metrics_port = std::stoi(out.substr(at + 23));
  {
    // Two connections, so both worker loops (round-robin) have numbers to give.
    RawClient first(server.port()), second(server.port());
    const std::vector<std::byte> message(1000, std::byte{'x'});
    first.send(message);
    second.send(message);
    EXPECT_EQ(first.read(message.size()), message);
    EXPECT_EQ(second.read(message.size()), message);
    HttpClient scraper(metrics_port);
    const auto answer = scraper.get("/metrics");
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->status, 200);
    EXPECT_NE(answer->body.find("\necho_connections_total 2\n"), std::string::npos) << answer->body;
    EXPECT_NE(answer->body.find("\necho_bytes_total 2000\n"), std::string::npos) << answer->body;
  }
  const auto [code, final_out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(final_out.find("stopped"), std::string::npos) << final_out;
}

TEST(Examples, ReconnectingClientGetsEveryQueuedMessageEchoedInOrder) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--framing", "checked", "--no-progress"});
  ASSERT_GT(server.port(), 0);
  const auto [code, out] = run_to_end(dir, {"reconnecting_client", std::to_string(server.port()), "300"}, "client");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("echoed 300 of 300, in order"), std::string::npos) << out;
  EXPECT_EQ(json_u64(server.stop(), "messages_in"), 300u);
}

// Two ports, the first with nobody listening: the client goes on to the second.
TEST(Examples, ReconnectingClientGoesOnToTheNextServerWhenTheFirstDoesNotAnswer) {
  TempDir dir;
  // Bound and not listening: the port stays this test's, and connects to it are refused.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor bound(io);
  bound.open(boost::asio::ip::tcp::v4());
  bound.bind({boost::asio::ip::make_address("127.0.0.1"), 0});
  const int gone_port = bound.local_endpoint().port();
  RunningPingPongServer server(dir, {"--framing", "checked", "--no-progress"});
  ASSERT_GT(server.port(), 0);
  const std::string ports = std::to_string(gone_port) + "," + std::to_string(server.port());
  const auto [code, out] = run_to_end(dir, {"reconnecting_client", ports, "50"}, "client");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("connect failed (Connection refused)"), std::string::npos) << out;
  EXPECT_NE(out.find("echoed 50 of 50, in order; connects 1, failovers 0, last server 127.0.0.1:" +
                     std::to_string(server.port())),
            std::string::npos)
      << out;
  EXPECT_EQ(json_u64(server.stop(), "messages_in"), 50u);
}

TEST(Examples, RpcServiceAnswersItsOwnStructs) {
  TempDir dir;
  const auto [code, out] = run_to_end(dir, {"rpc_service"}, "rpc");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("VOLY x100 at 10004 ticks"), std::string::npos) << out;
  EXPECT_NE(out.find("3 of 3 quotes answered; the reconnecting client's call: answered"), std::string::npos) << out;
}

TEST(Examples, OrderGatewayDispatchesTheUsersOwnStructsBothWays) {
  TempDir dir;
  const auto [code, out] = run_to_end(dir, {"order_gateway"}, "gateway");
  EXPECT_EQ(code, 0) << out;
  // 1000 orders (every hundredth without a quantity) and two cancels.
  EXPECT_NE(out.find("client: 992 accepted, 10 rejected (quantity and price must be positive) of 1002 sent"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("gateway: handled 1002, unknown 0, undecodable 0"), std::string::npos) << out;
}

TEST(Examples, ArqTransferDeliversEverythingInOrder) {
  TempDir dir;
  const auto [code, out] = run_to_end(dir, {"arq_transfer"}, "arq");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("all acknowledged; delivered 1000 of 1000 in order"), std::string::npos) << out;
}

TEST(Examples, HttpServerAnswersKeepAliveAndPipelinedRequestsAndRefusesGarbage) {
  TempDir dir;
  ExampleServer server(dir, "http_server");
  ASSERT_GT(server.port(), 0);
  {
    HttpClient c(server.port());
    const auto hello = c.get("/hello");
    ASSERT_TRUE(hello);
    EXPECT_EQ(hello->status, 200);
    EXPECT_EQ(hello->body, "hello from volley\n");
    // Two at once, answered in order on the same connection.
    c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhi+yoGET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto echo = c.read(), missing = c.read();
    ASSERT_TRUE(echo && missing);
    EXPECT_EQ(echo->body, "hi+yo");
    EXPECT_EQ(missing->status, 404);
    const auto stats = c.get("/stats");
    ASSERT_TRUE(stats);
    EXPECT_EQ(stats->body, "requests 4\n");
  }
  {
    HttpClient bad(server.port());
    bad.send("NOT HTTP\r\n\r\n");
    const auto refused = bad.read();
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400);
  }
  const auto [code, out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("requests served 4, bad requests refused 1\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace volley::test
