// Clients that know several servers (issue 40), on loopback: the server a
// client is on is killed with SIGKILL while it calls or sends, and the
// client goes on with the next. With RpcClient's replay policy no call is
// lost and they are answered in the order made; with the fail policy only
// the calls caught in flight fail. Round-robin clients spread over the
// servers and those of a killed one fail over to the others.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gtest/gtest.h>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/tcp_connect.hpp>
#include <volley/rpc/client.hpp>

#include "benchmark_messages.hpp"
#include "child_process.hpp"
#include "framings.hpp"
#include "listening_server.hpp"
#include "run_until.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;


// Three servers of one tool on loopback, any free ports.
struct ThreeServers {
  ThreeServers(const TempDir& dir, const std::vector<std::string>& argv) {
    for (int i = 0; i < 3; ++i) {
      std::vector<std::string> args = argv;
      args.insert(args.end(), {"-p", "0", "--json"});
      servers.push_back(std::make_unique<ListeningServer>(dir, args, args[0] + "-" + std::to_string(i)));
      addresses.push_back(loopback_address(servers.back()->port()));
    }
  }
  // SIGKILL: no goodbye, no flush.
  void kill(std::size_t i) {
    servers[i]->process().send_signal(SIGKILL);
    servers[i]->process().wait_for(10s);
  }
  std::size_t index_of(const std::string& address) const {
    for (std::size_t i = 0; i < addresses.size(); ++i)
      if (addresses[i] == address) return i;
    return addresses.size();
  }
  std::vector<std::unique_ptr<ListeningServer>> servers;
  std::vector<std::string> addresses;
};

const net::ServerStats* stats_for(const net::ReconnectingClientStats& stats, const std::string& address) {
  for (const auto& s : stats.servers)
    if (s.address == address) return &s;
  return nullptr;
}

class KilledServer : public testing::TestWithParam<rpc::InFlightPolicy> {};
INSTANTIATE_TEST_SUITE_P(Rpc, KilledServer, testing::Values(rpc::InFlightPolicy::fail, rpc::InFlightPolicy::replay),
                         [](const auto& info) { return info.param == rpc::InFlightPolicy::fail ? "fail" : "replay"; });

// A call every millisecond, 20 in flight at most; after 300 answers, a burst
// of 20 more and the first server is killed at once.
TEST_P(KilledServer, TheClientFailsOverToTheNextAndOnlyCallsInFlightCanFail) {
  TempDir dir;
  ThreeServers three(dir, {"rpc-server", "--bind", "127.0.0.1"});
  asio::io_context loop;
  rpc::RpcClient client(loop);
  net::ReconnectingClientOptions o;
  o.servers = three.addresses;
  o.server_policy = net::ServerPolicy::first;
  o.backoff = {.initial = 20ms, .maximum = 200ms};
  o.connect_timeout = 1s;
  client.start(o, GetParam());

  constexpr int kCalls = 1200;
  std::vector<std::int64_t> answered;  // in the order the answers came
  std::vector<std::int64_t> failed;
  int made = 0;
  std::optional<std::size_t> in_flight_at_kill;
  int made_before_drop_seen = 0;  // calls made from the kill until the client saw the drop
  asio::steady_timer tick(loop);
  const auto call = [&] {
    const std::int64_t t = made++;
    if (in_flight_at_kill && client.reconnect_stats()->disconnects == 0) ++made_before_drop_seen;
    client.call<benchmarks::Pong>(kRpcServerPing, kRpcServerPong, benchmarks::Ping{t}, 20s,
                                  [&, t](const std::error_code& ec, benchmarks::Pong pong) {
                                    if (ec) return failed.push_back(t);
                                    EXPECT_EQ(pong.t, t);
                                    answered.push_back(t);
                                  });
  };
  std::function<void()> call_more = [&] {
    if (made < kCalls && made - static_cast<int>(answered.size() + failed.size()) < 20) call();
    if (answered.size() >= 300 && !in_flight_at_kill) {
      // A burst just before the kill: calls on the wire, their answers not yet read.
      for (int i = 0; i < 20; ++i) call();
      in_flight_at_kill = client.pending();  // waiting ones included
      three.kill(0);
    }
    tick.expires_after(1ms);
    tick.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) call_more();
    });
  };
  ASSERT_TRUE(run_until(loop, [&] { return client.connected(); }, 10s));
  call_more();
  ASSERT_TRUE(run_until(loop, [&] { return answered.size() + failed.size() == kCalls; }, 60s))
      << answered.size() << " answered, " << failed.size() << " failed";
  tick.cancel();

  ASSERT_TRUE(in_flight_at_kill.has_value());
  std::cout << "[ calls    ] " << failed.size() << " of " << kCalls << " failed; " << *in_flight_at_kill
            << " were in flight at the kill, " << made_before_drop_seen << " made before the client saw it\n";
  if (GetParam() == rpc::InFlightPolicy::replay) {
    EXPECT_TRUE(failed.empty()) << "replay: every call answered";
    std::vector<std::int64_t> in_order(answered);
    std::sort(in_order.begin(), in_order.end());
    EXPECT_EQ(answered, in_order) << "answered in the order made, the replayed ones first";
  } else {
    EXPECT_LE(failed.size(), *in_flight_at_kill + static_cast<std::size_t>(made_before_drop_seen))
        << "only calls on the connection that died may fail";
  }
  const net::ReconnectingClientStats& stats = *client.reconnect_stats();
  EXPECT_EQ(stats.failovers, 1u);
  EXPECT_EQ(client.reconnect_stats()->disconnects, 1u);
  const auto* first = stats_for(stats, three.addresses[0]);
  const auto* second = stats_for(stats, three.addresses[1]);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr) << "the first policy goes on with the second server";
  EXPECT_EQ(first->connects, 1u);
  EXPECT_EQ(second->connects, 1u);
  EXPECT_EQ(stats_for(stats, three.addresses[2]), nullptr) << "the third was never needed";
  client.close();
  for (std::size_t i = 1; i < 3; ++i) three.servers[i]->stop();
}

// Six checked-frame session clients, round-robin over `three` from seeds
// 0..5 (so they start on servers 0, 1, 2, 0, 1, 2), counting echoes in `echoed`.
std::vector<std::unique_ptr<net::ReconnectingClient>> six_round_robin_clients(
    asio::io_context& loop, const ThreeServers& three, std::vector<int>& echoed,
    std::chrono::milliseconds return_home_after) {
  std::vector<std::unique_ptr<net::ReconnectingClient>> clients;
  for (std::size_t i = 0; i < 6; ++i) {
    net::ReconnectingClientOptions o;
    o.servers = three.addresses;
    o.server_policy = net::ServerPolicy::round_robin;
    o.backoff = {.initial = 20ms, .maximum = 200ms};
    o.return_home_after = return_home_after;
    o.make_codec = [] { return make_codec(Framing::checked); };
    o.jitter_seed = i;
    clients.push_back(std::make_unique<net::ReconnectingClient>(
        loop, o, net::ReconnectingClient::Callbacks{.on_message = [&echoed, i](const net::Message&) { ++echoed[i]; }}));
    clients.back()->start();
  }
  return clients;
}

// Six session clients, round-robin over three pingpong-servers: they spread
// over all three. One server is killed: its clients fail over to the other
// two, counted, and what they send afterwards is echoed.
TEST(Failover, RoundRobinClientsSpreadAndThoseOfAKilledServerMoveToTheOthers) {
  TempDir dir;
  ThreeServers three(dir, {"pingpong-server", "--bind", "127.0.0.1", "--framing", "checked"});
  asio::io_context loop;
  std::vector<int> echoed(6, 0);
  auto clients = six_round_robin_clients(loop, three, echoed, 0ms);
  const auto all_connected = [&] {
    for (const auto& c : clients)
      if (!c->connected()) return false;
    return true;
  };
  ASSERT_TRUE(run_until(loop, all_connected, 10s));
  std::map<std::size_t, int> per_server;
  for (const auto& c : clients) ++per_server[three.index_of(c->server())];
  EXPECT_EQ(per_server, (std::map<std::size_t, int>{{0, 2}, {1, 2}, {2, 2}})) << "six clients, two on each server";

  const std::size_t victim = three.index_of(clients[0]->server());
  std::set<std::size_t> moved;
  for (std::size_t i = 0; i < clients.size(); ++i)
    if (three.index_of(clients[i]->server()) == victim) moved.insert(i);
  three.kill(victim);
  ASSERT_TRUE(run_until(loop, [&] {
    for (const std::size_t i : moved)
      if (clients[i]->stats().disconnects == 0) return false;
    return all_connected();
  }, 10s));
  for (std::size_t i = 0; i < clients.size(); ++i) {
    EXPECT_NE(three.index_of(clients[i]->server()), victim) << "client " << i;
    EXPECT_EQ(clients[i]->stats().failovers, moved.count(i)) << "client " << i;
    for (int m = 0; m < 10; ++m) clients[i]->send(message(Framing::checked, "after " + std::to_string(m)));
  }
  ASSERT_TRUE(run_until(loop, [&] {
    for (const int n : echoed)
      if (n < 10) return false;
    return true;
  }, 10s));
  for (auto& c : clients) c->stop();
  run_until(loop, [&] { return !std::any_of(clients.begin(), clients.end(), [](const auto& c) { return c->connected(); }); }, 5s);
  for (std::size_t i = 0; i < 3; ++i)
    if (i != victim) three.servers[i]->stop();
}

// The same six clients with return_home_after: once the killed server is
// back (a new process on its port), the clients that left it return, each
// once, and the six spread two to a server again.
TEST(Failover, ClientsThatFailedOverReturnToTheirOwnServerOnceItIsBack) {
  TempDir dir;
  ThreeServers three(dir, {"pingpong-server", "--bind", "127.0.0.1", "--framing", "checked"});
  asio::io_context loop;
  std::vector<int> echoed(6, 0);
  auto clients = six_round_robin_clients(loop, three, echoed, 100ms);
  const auto spread = [&] {
    std::map<std::size_t, int> per_server;
    for (const auto& c : clients)
      if (c->connected()) ++per_server[three.index_of(c->server())];
    return per_server;
  };
  const std::map<std::size_t, int> even{{0, 2}, {1, 2}, {2, 2}};
  ASSERT_TRUE(run_until(loop, [&] { return spread() == even; }, 10s));

  const std::size_t victim = 1;
  three.kill(victim);
  const auto away = [&] {
    const auto s = spread();
    return s.count(victim) == 0 && s.count(0) == 1 && s.count(2) == 1 && s.at(0) + s.at(2) == 6;
  };
  ASSERT_TRUE(run_until(loop, away, 10s)) << "the victim's two clients moved to the others";
  run_until(loop, [] { return false; }, 300ms);  // probes that find nobody home: they stay
  EXPECT_TRUE(away());

  const auto port = three.addresses[victim].substr(three.addresses[victim].rfind(':') + 1);
  ListeningServer back(dir, {"pingpong-server", "--bind", "127.0.0.1", "--framing", "checked", "-p", port, "--json"},
                       "back");
  ASSERT_TRUE(run_until(loop, [&] { return spread() == even; }, 10s)) << "the two returned";
  for (std::size_t i = 0; i < clients.size(); ++i) {
    const bool moved = i % 3 == victim;  // seeds 1 and 4 start on server 1
    EXPECT_EQ(clients[i]->stats().returns, moved ? 1u : 0u) << "client " << i;
    EXPECT_EQ(clients[i]->stats().failovers, moved ? 2u : 0u) << "client " << i << ": away and back";
    for (int m = 0; m < 10; ++m) clients[i]->send(message(Framing::checked, "after " + std::to_string(m)));
  }
  ASSERT_TRUE(run_until(loop, [&] {
    return std::all_of(echoed.begin(), echoed.end(), [](int n) { return n >= 10; });
  }, 10s));
  for (auto& c : clients) c->stop();
  run_until(loop, [&] { return !std::any_of(clients.begin(), clients.end(), [](const auto& c) { return c->connected(); }); }, 5s);
  EXPECT_EQ(json_u64(back.stop(), "messages_in"), 20u) << "the returned clients' messages went to it";
  three.servers[0]->stop();
  three.servers[2]->stop();
}

// Servers on one port with --reuse-port: the second starts beside the first
// (one without the flag is refused, and told why), the kernel spreads 40
// connections over both, and once one has stopped the other takes every new
// connection: a new version can start before the old one stops.
TEST(ReusePort, ServersShareAPortAndTheOneLeftTakesEveryNewConnection) {
  TempDir dir;
  RunningPingPongServer first(dir, {"--reuse-port"}, 0, "first");
  const int port = first.port();
  ASSERT_GT(port, 0);
  RunningPingPongServer second(dir, {"--reuse-port"}, port, "second");
  ASSERT_EQ(second.port(), port);

  ChildProcess refused({bin("volley"), "pingpong-server", "-p", std::to_string(port)}, dir.file("refused"));
  EXPECT_NE(refused.wait_for(10s).value_or(0), 0);
  EXPECT_NE(refused.stderr_text().find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << refused.stderr_text();
  EXPECT_NE(refused.stderr_text().find("--reuse-port"), std::string::npos) << refused.stderr_text();

  const auto clients = [&](int n, const std::string& name) {
    ChildProcess c({bin("volley"), "pingpong", "-p", std::to_string(port), "-g", "3", "-c", std::to_string(n), "-m",
                    "10", "--no-progress"},
                   dir.file(name));
    EXPECT_EQ(c.wait_for(30s).value_or(-1), 0) << c.stderr_text();
  };
  clients(40, "forty");
  const auto second_report = second.stop();
  const std::uint64_t on_second = json_u64(second_report, "sessions");
  EXPECT_GT(on_second, 0u) << "the kernel gave the second server none of 40";
  EXPECT_LT(on_second, 40u) << "the kernel gave the first server none of 40";
  clients(10, "ten");
  const auto first_report = first.stop();
  EXPECT_EQ(json_u64(first_report, "sessions"), 40 - on_second + 10) << "every new connection to the one left";
  EXPECT_EQ(json_u64(first_report, "messages_in"), json_u64(first_report, "messages_out"));
}

// The generator spreads its connections over every --server in turn, and
// its report says how many went where.
TEST(Failover, TheGeneratorSpreadsItsConnectionsOverTheServersItIsGiven) {
  TempDir dir;
  ThreeServers three(dir, {"target", "--no-progress"});
  std::vector<std::string> argv{bin("traffic_generator"), "-m", "8001:100:100", "-c", "7", "-t", "0.3", "--json",
                                "--no-progress"};
  for (const auto& a : three.addresses) argv.insert(argv.end(), {"--server", a});
  ChildProcess gen(argv, dir.file("gen"));
  ASSERT_EQ(gen.wait_for(60s).value_or(-1), 0) << gen.stderr_text();
  const auto report = boost::json::parse(gen.stdout_text()).as_object();
  const auto& servers = report.at("servers").as_array();
  ASSERT_EQ(servers.size(), 3u) << gen.stdout_text();
  std::uint64_t frames_at_targets = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(servers[i].at("address").as_string(), three.addresses[i]);
    EXPECT_EQ(servers[i].at("connections").as_int64(), i == 0 ? 3 : 2) << "seven connections, in turn";
    const auto target = three.servers[i]->stop();
    EXPECT_EQ(json_u64(target.at("connections").as_object(), "accepted"), i == 0 ? 3u : 2u)
        << boost::json::serialize(target);
    frames_at_targets += json_u64(target, "frames");
  }
  EXPECT_EQ(frames_at_targets, boost::json::value_to<std::uint64_t>(report.at("frames")));

  ChildProcess bad({bin("traffic_generator"), "-m", "8001:100:100", "--server", "nowhere"}, dir.file("bad"));
  EXPECT_EQ(bad.wait_for(10s).value_or(-1), 2);
  EXPECT_NE(bad.stderr_text().find("--server nowhere: not ADDRESS:PORT"), std::string::npos) << bad.stderr_text();
}

// Addresses as a client is given them.
TEST(Failover, ServerAddressesAreHostPortOrUnixAndAnythingElseIsRefused) {
  std::string host;
  std::uint16_t port = 0;
  ASSERT_TRUE(net::split_server_address("10.0.0.7:9000", host, port));
  EXPECT_EQ(host, "10.0.0.7");
  EXPECT_EQ(port, 9000);
  ASSERT_TRUE(net::split_server_address("[::1]:80", host, port));
  EXPECT_EQ(host, "::1");
  ASSERT_TRUE(net::split_server_address("svc.internal:65535", host, port));
  EXPECT_EQ(host, "svc.internal");
  ASSERT_TRUE(net::split_server_address("unix:/run/svc.sock", host, port));
  EXPECT_EQ(host, "unix:/run/svc.sock");
  EXPECT_EQ(port, 0);
  for (const char* bad : {"10.0.0.7", "10.0.0.7:", ":9000", "::1:80", "[::1]", "h:0", "h:65536", "h:9x", "[]:1"})
    EXPECT_FALSE(net::split_server_address(bad, host, port)) << bad;

  asio::io_context loop;
  net::ReconnectingClientOptions o;
  o.servers = {"127.0.0.1:9000", "nowhere"};
  o.make_codec = [] { return make_codec(Framing::checked); };
  EXPECT_THROW(net::ReconnectingClient(loop, o, {}), std::invalid_argument);
  EXPECT_EQ(net::endpoint_text({asio::ip::make_address("2001:db8::1"), 5000}), "[2001:db8::1]:5000");
}

}  // namespace
}  // namespace volley::test
