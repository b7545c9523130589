// Restarts without dropping clients (issue 40), on loopback: a server run
// with --drain tells each session peer goodbye on SIGTERM (the framing's
// goodbye frame), keeps serving it until it leaves, answers /healthz with 503
// "draining", closes a peer that stays at --drain-timeout, and exits. Clients
// leave at once and reconnect: to the next server, or to a new process on the
// same port (--reuse-port), as in a rolling restart of three rpc-servers
// under a steady call rate.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <gtest/gtest.h>

#include <volley/net/reconnecting_client.hpp>
#include <volley/rpc/client.hpp>

#include "benchmark_messages.hpp"
#include "bytes_of.hpp"
#include "child_process.hpp"
#include "framings.hpp"
#include "http_client.hpp"
#include "listening_server.hpp"
#include "metrics_scrape.hpp"
#include "raw_client.hpp"
#include "run_until.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;


class Goodbye : public testing::TestWithParam<Framing> {};
INSTANTIATE_TEST_SUITE_P(Framings, Goodbye, testing::Values(Framing::checked, Framing::gnb, Framing::rpc),
                         [](const auto& info) { return std::string(framing_flag(info.param)); });

// A client sends a message every millisecond to the first of two servers; the
// first is told to drain. The client hears the goodbye, leaves, goes on with
// the second, and every message it was given is echoed exactly once.
TEST_P(Goodbye, TheClientLeavesADrainingServerAndLosesNothing) {
  const Framing framing = GetParam();
  TempDir dir;
  ListeningServer draining(dir, {"pingpong-server", "-p", "0", "--json", "--framing", framing_flag(framing), "--drain"},
                           "draining");
  ListeningServer other(dir, {"pingpong-server", "-p", "0", "--json", "--framing", framing_flag(framing)}, "other");
  asio::io_context loop;
  int echoed = 0;
  net::ReconnectingClientOptions o;
  o.servers = {loopback_address(draining.port()), loopback_address(other.port())};
  o.backoff = {.initial = 20ms, .maximum = 200ms};
  o.make_codec = [framing] { return make_codec(framing); };
  net::ReconnectingClient client(loop, o, {.on_message = [&](const net::Message&) { ++echoed; }});
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return client.connected(); }, 10s));
  EXPECT_EQ(client.server(), o.servers[0]);

  int sent = 0;
  asio::steady_timer tick(loop);
  std::function<void()> send_one = [&] {
    const auto r = client.send(message(framing, "message " + std::to_string(sent)));
    ASSERT_TRUE(r == net::SendResult::sent || r == net::SendResult::queued) << net::to_string(r);
    ++sent;
    tick.expires_after(1ms);
    tick.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) send_one();
    });
  };
  send_one();
  ASSERT_TRUE(run_until(loop, [&] { return echoed >= 50; }, 10s));
  draining.process().send_signal(SIGTERM);
  ASSERT_TRUE(run_until(loop, [&] { return client.stats().goodbyes == 1 && client.connected(); }, 10s));
  run_until(loop, [] { return false; }, 100ms);  // sending on to the second server
  tick.cancel();
  ASSERT_TRUE(run_until(loop, [&] { return echoed == sent && client.outbox_messages() == 0; }, 10s))
      << echoed << " of " << sent << " echoed";

  EXPECT_EQ(client.server(), o.servers[1]);
  EXPECT_EQ(client.stats().disconnects, 1u);
  EXPECT_EQ(client.stats().failovers, 1u);
  EXPECT_EQ(client.stats().unsent_bytes_lost, 0u);
  const auto first = draining.report();  // it exits once its one client has left
  EXPECT_EQ(json_u64(first, "goodbyes_out"), 1u);
  EXPECT_EQ(json_u64(first, "messages_in"), json_u64(first, "messages_out"));
  EXPECT_EQ(json_u64(first.at("closes").as_object(), "peer closed"), 1u) << boost::json::serialize(first);
  client.stop();
  run_until(loop, [&] { return !client.connected(); }, 5s);
  const auto second = other.stop();
  EXPECT_EQ(json_u64(first, "messages_in") + json_u64(second, "messages_in"), static_cast<std::uint64_t>(sent));
}

// A peer that does not know the goodbye (a raw socket) reads its bytes, is
// still answered while the server drains, and is closed at --drain-timeout;
// meanwhile /healthz says 503 "draining" and the port takes no one new.
TEST(Drain, APeerThatStaysIsServedUntilTheDeadlineWhileHealthzSaysDraining) {
  TempDir dir;
  ListeningServer server(dir, {"pingpong-server", "-p", "0", "--json", "--framing", "checked", "--drain",
                               "--drain-timeout", "3s", "--metrics", "127.0.0.1:0"},
                         "server");
  const int metrics = metrics_port(server.process());
  ASSERT_GT(metrics, 0);
  RawClient peer(server.port());
  const auto hi = bytes_of(std::string_view("\x00\x00\x07\x01\x01hi", 7));  // "hi", checked
  peer.send(hi);
  EXPECT_EQ(peer.read(hi.size()), hi);
  {
    HttpClient health(metrics);
    const auto ok = health.get("/healthz");
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200);
  }

  server.process().send_signal(SIGTERM);
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(peer.read(5), bytes_of(std::string_view("\x00\x00\x05\x02\x00", 5))) << "the checked frame's goodbye";
  {
    HttpClient health(metrics);
    const auto draining = health.get("/healthz");
    ASSERT_TRUE(draining);
    EXPECT_EQ(draining->status, 503);
    EXPECT_EQ(draining->body, "draining\n");
  }
  EXPECT_THROW(RawClient{server.port()}, std::runtime_error) << "no longer listening";
  peer.send(hi);
  EXPECT_EQ(peer.read(hi.size()), hi) << "still served while draining";
  EXPECT_TRUE(peer.read(1).empty()) << "closed at the drain's deadline";
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_GE(waited, 2500ms);
  const auto report = server.report();
  EXPECT_EQ(json_u64(report, "goodbyes_out"), 1u);
  EXPECT_EQ(json_u64(report.at("closes").as_object(), "shutdown"), 1u) << boost::json::serialize(report);
}

class RollingRestart : public testing::TestWithParam<rpc::InFlightPolicy> {};
INSTANTIATE_TEST_SUITE_P(Rpc, RollingRestart, testing::Values(rpc::InFlightPolicy::fail, rpc::InFlightPolicy::replay),
                         [](const auto& info) { return info.param == rpc::InFlightPolicy::fail ? "fail" : "replay"; });

// Three rpc-servers share a port (--reuse-port); four clients call at a steady
// rate (one call per client per millisecond, eight in flight at most). Each
// server in turn is replaced: a new process starts on the port, the old one
// gets SIGTERM with --drain and exits once its clients have left. With the
// replay policy no call fails, and each client's answers come in the order
// its calls were made; with the fail policy, failures are at most the calls
// pending at each hand-over and made during it.
TEST_P(RollingRestart, NoCallFailsWithReplayAndFailuresAreBoundedByTheCallsInFlight) {
  TempDir dir;
  const std::vector<std::string> args{"rpc-server", "--bind", "127.0.0.1", "--reuse-port", "--drain", "--json"};
  const auto start_server = [&](int port, const std::string& name) {
    std::vector<std::string> argv = args;
    argv.insert(argv.end(), {"-p", std::to_string(port)});
    return std::make_unique<ListeningServer>(dir, argv, name);
  };
  std::vector<std::unique_ptr<ListeningServer>> old;
  old.push_back(start_server(0, "old-0"));
  const int port = old[0]->port();
  ASSERT_GT(port, 0);
  for (int i = 1; i < 3; ++i) old.push_back(start_server(port, "old-" + std::to_string(i)));

  asio::io_context loop;
  constexpr std::size_t kClients = 4;
  constexpr int kInFlight = 8;
  struct Caller {
    std::unique_ptr<rpc::RpcClient> client;
    int made = 0;
    std::vector<std::int64_t> answered;
    std::vector<std::int64_t> failed;
  };
  std::vector<Caller> callers(kClients);
  for (std::size_t i = 0; i < kClients; ++i) {
    callers[i].client = std::make_unique<rpc::RpcClient>(loop);
    net::ReconnectingClientOptions o;
    o.servers = {loopback_address(port)};
    o.backoff = {.initial = 20ms, .maximum = 200ms};
    o.connect_timeout = 1s;
    o.jitter_seed = i;
    callers[i].client->start(o, GetParam());
  }
  ASSERT_TRUE(run_until(loop, [&] {
    return std::all_of(callers.begin(), callers.end(), [](const Caller& c) { return c.client->connected(); });
  }, 10s));

  // The roll runs beside the loop; they share only these counts.
  std::atomic<std::size_t> pending{0};  // the clients' calls not yet answered, as of the last tick
  std::atomic<int> made{0};
  std::atomic<bool> rolled{false};
  std::vector<std::size_t> pending_at_term(3), made_during(3);
  std::vector<boost::json::object> drained(3);
  std::vector<std::unique_ptr<ListeningServer>> fresh;
  std::thread roll([&] {
    std::this_thread::sleep_for(300ms);  // calls under way
    for (std::size_t i = 0; i < 3; ++i) {
      fresh.push_back(start_server(port, "new-" + std::to_string(i)));
      pending_at_term[i] = pending.load();
      const int made_before = made.load();
      old[i]->process().send_signal(SIGTERM);
      drained[i] = old[i]->report();
      made_during[i] = static_cast<std::size_t>(made.load() - made_before);
      std::this_thread::sleep_for(100ms);
    }
    rolled = true;
  });

  asio::steady_timer tick(loop);
  bool calling = true;
  std::function<void()> call_more = [&] {
    std::size_t now_pending = 0;
    for (Caller& c : callers) {
      if (calling && c.made - static_cast<int>(c.answered.size() + c.failed.size()) < kInFlight) {
        const std::int64_t t = c.made++;
        ++made;
        c.client->call<benchmarks::Pong>(kRpcServerPing, kRpcServerPong, benchmarks::Ping{t}, 20s,
                                         [&c, t](const std::error_code& ec, benchmarks::Pong pong) {
                                           if (ec) return c.failed.push_back(t);
                                           EXPECT_EQ(pong.t, t);
                                           c.answered.push_back(t);
                                         });
      }
      now_pending += c.client->pending();
    }
    pending = now_pending;
    tick.expires_after(1ms);
    tick.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) call_more();
    });
  };
  call_more();
  const auto all_done = [&] {
    return std::all_of(callers.begin(), callers.end(), [](const Caller& c) {
      return c.answered.size() + c.failed.size() == static_cast<std::size_t>(c.made);
    });
  };
  const bool finished = run_until(loop, [&] { return rolled.load(); }, 120s);
  roll.join();
  ASSERT_TRUE(finished) << "the roll did not finish";
  run_until(loop, [] { return false; }, 200ms);  // calls on the new servers alone
  calling = false;
  ASSERT_TRUE(run_until(loop, all_done, 30s));
  tick.cancel();

  std::size_t failed = 0, answered = 0, goodbyes = 0, disconnects = 0;
  for (const Caller& c : callers) {
    failed += c.failed.size();
    answered += c.answered.size();
    goodbyes += c.client->reconnect_stats()->goodbyes;
    disconnects += c.client->reconnect_stats()->disconnects;
    EXPECT_GE(c.client->reconnect_stats()->goodbyes, 1u) << "every client was on a server that drained";
    if (GetParam() == rpc::InFlightPolicy::replay) {
      EXPECT_TRUE(std::is_sorted(c.answered.begin(), c.answered.end())) << "answered in the order made";
    }
  }
  std::size_t bound = 0, goodbyes_sent = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    bound += pending_at_term[i] + made_during[i];
    goodbyes_sent += json_u64(drained[i], "goodbyes_out");
    std::cout << "[ hand-over] old server " << i << ": " << pending_at_term[i] << " calls pending at SIGTERM, "
              << made_during[i] << " made while it drained, " << json_u64(drained[i], "goodbyes_out")
              << " goodbyes sent\n";
  }
  std::cout << "[ calls    ] " << answered << " answered, " << failed << " failed; " << goodbyes
            << " goodbyes heard, " << disconnects << " disconnects\n";
  EXPECT_EQ(goodbyes, goodbyes_sent) << "every goodbye sent was heard";
  if (GetParam() == rpc::InFlightPolicy::replay) {
    EXPECT_EQ(failed, 0u) << "replay: every call answered";
  } else {
    EXPECT_LE(failed, bound) << "only calls pending at a hand-over or made during it may fail";
  }
  EXPECT_GT(answered, 1000u);
  for (Caller& c : callers) c.client->close();
  for (auto& s : fresh) s->stop();
}

}  // namespace
}  // namespace volley::test
