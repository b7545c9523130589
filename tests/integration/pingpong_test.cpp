// `volley pingpong-server` and `volley pingpong` as processes on loopback:
// heartbeats, protocol-error policies, idle timeout, the gNB keepalive, the benchmark groups.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <volley/wire/checked.hpp>

#include "child_process.hpp"
#include "listening_server.hpp"
#include "metrics_scrape.hpp"
#include "raw_client.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace checked = wire::checked;

std::vector<std::byte> message(const std::string& text) {
  std::vector<std::byte> out(checked::kHeaderSize + text.size());
  checked::encode(checked::FrameType::message, std::as_bytes(std::span(text.data(), text.size())), out);
  return out;
}

std::vector<std::byte> raw(std::initializer_list<int> bytes) {
  std::vector<std::byte> out;
  for (int b : bytes) out.push_back(std::byte(static_cast<unsigned char>(b)));
  return out;
}

long long ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

TEST(PingPongServer, DisconnectsASilentPeerAfterIntervalTimesMisses) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--heartbeat-ms", "200", "--heartbeat-misses", "2"});
  // Before the connection exists: the server's session cannot start earlier.
  const auto start = Clock::now();
  RawClient client(server.port());
  // The server's heartbeats arrive while it waits for ours, then the connection ends.
  std::size_t heartbeat_bytes = 0;
  for (;;) {
    const auto b = client.read(1);
    if (b.empty()) break;
    ++heartbeat_bytes;
  }
  const auto elapsed = ms_since(start);
  EXPECT_GE(heartbeat_bytes, checked::kHeaderSize);
  EXPECT_EQ(heartbeat_bytes % checked::kHeaderSize, 0u);
  // Not before interval x misses; the exact moment is the session policy's,
  // tested on a virtual clock (SessionPolicy.*), so the upper bound here only
  // says "it happened", on a machine that may be busy.
  EXPECT_GE(elapsed, 395);
  EXPECT_LE(elapsed, 2000);
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report.at("closes").as_object(), "heartbeat timeout"), 1u);
  EXPECT_NE(server.process().stderr_text().find("heartbeat timeout"), std::string::npos);
}

TEST(PingPongServer, KeepsAPeerThatSendsHeartbeats) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--heartbeat-ms", "200", "--heartbeat-misses", "2"});
  RawClient client(server.port());
  const auto heartbeat = checked::heartbeat_frame();
  for (int i = 0; i < 10; ++i) {  // 1 s: well past the 400 ms a silent peer gets
    client.send(heartbeat);
    std::this_thread::sleep_for(100ms);
  }
  // Its heartbeats were read and are not echoed; a message still is.
  client.send(message("still here"));
  std::vector<std::byte> got;
  const auto expected = message("still here");
  while (got.size() < expected.size() + 64) {
    const auto frame = client.read(checked::kHeaderSize);
    ASSERT_EQ(frame.size(), checked::kHeaderSize);
    if (frame[3] == std::byte{0}) continue;  // the server's heartbeat
    const auto rest = client.read(expected.size() - checked::kHeaderSize);
    got = frame;
    got.insert(got.end(), rest.begin(), rest.end());
    break;
  }
  EXPECT_EQ(got, expected);
  client.close();
  const auto report = server.stop();
  EXPECT_GE(json_u64(report, "heartbeats_in"), 9u);
  EXPECT_EQ(json_u64(report, "messages_in"), 1u);
  EXPECT_EQ(json_u64(report.at("closes").as_object(), "heartbeat timeout"), 0u);
}

TEST(PingPongServer, DropPolicyCountsBadFramesAndGoesOn) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--heartbeat-ms", "0"});
  RawClient client(server.port());
  auto bad_checksum = message("hi");
  bad_checksum[4] ^= std::byte{0xFF};
  const auto ok = message("ok");
  client.send(bad_checksum);
  client.send(ok);
  EXPECT_EQ(client.read(ok.size()), ok);
  client.send(raw({0x00, 0x00, 0x03, 0x01, 0x00}));  // total length 3: below the header (the seed hung here)
  client.send(ok);
  EXPECT_EQ(client.read(ok.size()), ok);
  client.send(raw({0x00, 0x00, 0x06, 0x07, 0x41, 0x41}));  // type 7
  client.send(ok);
  EXPECT_EQ(client.read(ok.size()), ok);
  client.close();
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "protocol_errors"), 3u);
  EXPECT_EQ(json_u64(report, "messages_in"), 3u);
  const std::string log = server.process().stderr_text();
  EXPECT_NE(log.find("bad checksum (frame dropped)"), std::string::npos) << log;
  EXPECT_NE(log.find("length below the header size (frame dropped)"), std::string::npos) << log;
  EXPECT_NE(log.find("unknown message type (frame dropped)"), std::string::npos) << log;
}

TEST(PingPongServer, ClosePolicyClosesOnlyTheOffendingConnection) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--heartbeat-ms", "0", "--on-protocol-error", "close"});
  RawClient good(server.port());
  RawClient bad(server.port());
  const auto ok = message("ok");
  good.send(ok);
  EXPECT_EQ(good.read(ok.size()), ok);
  auto corrupt = message("hi");
  corrupt[4] ^= std::byte{0x01};
  bad.send(corrupt);
  bad.send(ok);  // after the bad frame: never answered
  EXPECT_TRUE(bad.peer_closed());
  good.send(ok);
  EXPECT_EQ(good.read(ok.size()), ok);
  good.close();
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "protocol_errors"), 1u);
  EXPECT_EQ(json_u64(report.at("closes").as_object(), "protocol error"), 1u);
  EXPECT_EQ(json_u64(report, "messages_in"), 2u);
}

TEST(PingPongServer, ClosesAnIdleSession) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--heartbeat-ms", "0", "--idle-timeout-ms", "300"});
  RawClient client(server.port());
  const auto ok = message("ok");
  // Before the message goes: the server's idle clock restarts when the message
  // arrives, which is before its echo reaches us.
  const auto start = Clock::now();
  client.send(ok);
  ASSERT_EQ(client.read(ok.size()), ok);
  EXPECT_TRUE(client.peer_closed());
  const auto elapsed = ms_since(start);
  EXPECT_GE(elapsed, 300);
  EXPECT_LE(elapsed, 2000);
  client.close();
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report.at("closes").as_object(), "idle timeout"), 1u);
}

TEST(PingPongServer, GnbFramingEchoesWholeFramesAndTakesTheKeepalive) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--framing", "gnb", "--heartbeat-ms", "5000"});
  RawClient client(server.port());
  const auto keepalive = raw({0, 0, 0, 0, 0, 0});
  const auto control = raw({0x10, 0x01, 0x00, 0x00, 0x00, 0x04, 0xAA, 0xBB, 0xCC, 0xDD});
  client.send(keepalive);
  client.send(control);
  client.send(keepalive);
  client.send(control);
  auto expected = control;
  expected.insert(expected.end(), control.begin(), control.end());
  EXPECT_EQ(client.read(expected.size()), expected);
  client.close();
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "heartbeats_in"), 2u);
  EXPECT_EQ(json_u64(report, "messages_in"), 2u);
  EXPECT_EQ(json_u64(report, "protocol_errors"), 0u);
}

TEST(PingPongServer, RpcFramingEchoesWholeFramesAndTakesTheKeepalive) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--framing", "rpc"});
  RawClient client(server.port());
  const auto keepalive = raw({0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFE});
  const auto request = raw({0, 0, 0, 9, 0, 0, 0, 3, 0, 0, 0, 1, 0x61, 0x62, 0x63});
  client.send(keepalive);
  client.send(request);
  client.send(keepalive);
  EXPECT_EQ(client.read(request.size()), request);
  client.close();
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "heartbeats_in"), 2u);
  EXPECT_EQ(json_u64(report, "messages_in"), 1u);
}

TEST(PingPongServer, AClientThatReadsLateGetsEveryEchoInOrder) {
  TempDir dir;
  // A small high-water mark: the server must stop reading while its replies back up.
  RunningPingPongServer server(dir, {"--max-queued", "65536", "--metrics", "127.0.0.1:0"});
  const int mport = metrics_port(server.process());
  ASSERT_GT(mport, 0) << server.process().stdout_text();
  RawClient client(server.port());
  constexpr int kMessages = 3000;
  std::vector<std::byte> expected;
  for (int i = 0; i < kMessages; ++i) {
    const auto m = message(std::string(1000, static_cast<char>('a' + i % 26)) + std::to_string(i));
    expected.insert(expected.end(), m.begin(), m.end());
  }
  std::thread writer([&] { client.send(expected); });
  // Nothing is read until the server says its queue crossed high water (a
  // fixed sleep stood in for this, and on a busy machine the reading could
  // begin first and the count below come out 0).
  EXPECT_TRUE(wait_for_metric(mport, "volley_high_water_events_total", [](double n) { return n >= 1; }, 60s));
  const auto got = client.read(expected.size());
  writer.join();
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected);
  client.close();
  const auto report = server.stop();
  EXPECT_GE(json_u64(report, "high_water_events"), 1u);
  EXPECT_EQ(json_u64(report, "messages_out"), static_cast<std::uint64_t>(kMessages));
}

boost::json::object run_pingpong(const TempDir& dir, int port, std::vector<std::string> args) {
  std::vector<std::string> argv{bin("volley"), "pingpong", "-p", std::to_string(port), "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess client(argv, dir.file("pingpong"));
  const auto code = client.wait_for(60s);
  EXPECT_EQ(code.value_or(-1), 0) << client.stderr_text();
  const std::string text = client.stdout_text();
  if (text.find('{') == std::string::npos) return {};
  return boost::json::parse(text).as_object();
}

TEST(PingPong, GroupOneTimesEveryRoundTripPerSize) {
  TempDir dir;
  RunningPingPongServer server(dir, {});
  const auto report = run_pingpong(dir, server.port(), {"-g", "1", "--sizes", "1,1000,100000", "-n", "50", "--warmup", "5"});
  EXPECT_EQ(json_u64(report, "mismatches"), 0u);
  const auto& rows = report.at("results").as_array();
  ASSERT_EQ(rows.size(), 3u);
  const std::uint64_t sizes[] = {1, 1000, 100000};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i].as_object();
    EXPECT_EQ(json_u64(row, "payload_bytes"), sizes[i]);
    EXPECT_EQ(json_u64(row, "messages"), 50u);
    EXPECT_GT(row.at("p50_us").to_number<double>(), 0.0);
    EXPECT_LE(row.at("min_us").to_number<double>(), row.at("p50_us").to_number<double>());
    EXPECT_LE(row.at("p99_us").to_number<double>(), row.at("max_us").to_number<double>());
  }
  const auto totals = server.stop();
  // 5 warm-up and 50 timed per size, each echoed once.
  EXPECT_EQ(json_u64(totals, "messages_in"), 3u * 55u);
  EXPECT_EQ(json_u64(totals, "messages_out"), 3u * 55u);
}

TEST(PingPong, GroupTwoBurstsAndGroupThreeCountsQueries) {
  TempDir dir;
  RunningPingPongServer server(dir, {"-t", "2"});
  const auto burst = run_pingpong(dir, server.port(), {"-g", "2", "--sizes", "10,10000", "-n", "500", "--warmup", "0"});
  ASSERT_EQ(burst.at("results").as_array().size(), 2u);
  EXPECT_EQ(json_u64(burst.at("results").as_array()[1].as_object(), "messages"), 500u);
  EXPECT_EQ(json_u64(burst, "mismatches"), 0u);
  const auto many = run_pingpong(dir, server.port(), {"-g", "3", "-c", "4", "-m", "2000", "-t", "2", "--warmup", "0"});
  EXPECT_EQ(json_u64(many, "clients"), 4u);
  EXPECT_GT(many.at("qps").to_number<double>(), 0.0);
  EXPECT_EQ(json_u64(many, "mismatches"), 0u);
  const auto totals = server.stop();
  EXPECT_EQ(json_u64(totals, "messages_in"), 1000u + 4u * 2000u);
  EXPECT_EQ(json_u64(totals, "sessions"), 5u);
}

TEST(PingPong, RefusesBadFlagsAndASilentPort) {
  TempDir dir;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-g", "4"}, {"--sizes", "1,x"}, {"--framing", "gnb"}, {"--heartbeat-misses", "0"},
        {"--sizes", "2000000"}}) {
    std::vector<std::string> argv{bin("volley"), "pingpong", "-p", "1"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, dir.file("bad"));
    const auto code = p.wait_for(20s);
    EXPECT_NE(code.value_or(0), 0) << args[0];
    EXPECT_FALSE(p.stderr_text().empty()) << args[0];
  }
  // Nothing listens on port 1: a clear error, not a hang.
  ChildProcess p({bin("volley"), "pingpong", "-p", "1"}, dir.file("refused"));
  EXPECT_EQ(p.wait_for(20s).value_or(-1), 1);
  EXPECT_NE(p.stderr_text().find("cannot connect"), std::string::npos) << p.stderr_text();
}

}  // namespace
}  // namespace volley::test
