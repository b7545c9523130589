// `volley netem` as a real process over loopback, and its TUN mode between two
// network namespaces made by scripts/netem-tun.sh (where root).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <csignal>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "child_process.hpp"
#include "target_fixture.hpp"
#include "udp_helpers.hpp"

using namespace volley::test;
using namespace std::chrono_literals;

namespace {

class RunningRelay {
 public:
  // `prefix`: a command the relay runs under (prlimit, say).
  RunningRelay(const TempDir& dir, int forward_port, std::vector<std::string> args, const std::string& name = "relay",
               std::vector<std::string> prefix = {}) {
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {bin("volley"), "netem", "--listen", "127.0.0.1:0", "--forward",
                             "127.0.0.1:" + std::to_string(forward_port), "--json", "--no-progress", "--ready-file",
                             dir.file(name + ".ready")});
    argv.insert(argv.end(), args.begin(), args.end());
    process_ = std::make_unique<ChildProcess>(argv, dir.file(name));
    for (int i = 0; i < 1000 && port_ == 0; ++i) {
      const std::string text = read_file(dir.file(name + ".ready"));
      if (!text.empty()) port_ = std::stoi(text);
      else std::this_thread::sleep_for(10ms);
    }
    if (port_ == 0) ADD_FAILURE() << "relay did not start: " << process_->stderr_text();
  }
  int port() const { return port_; }
  void signal(int signo) { process_->send_signal(signo); }
  // Waits (10 s at most) until the relay's log has said `line` `times` times.
  bool logged(const std::string& line, int times) {
    for (int i = 0; i < 1000; ++i) {
      const std::string log = process_->stderr_text();
      int seen = 0;
      for (auto at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++seen;
      if (seen >= times) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  boost::json::object stop() {
    process_->send_signal(SIGTERM);
    EXPECT_EQ(process_->wait_for(20s).value_or(-1), 0) << process_->stderr_text();
    return boost::json::parse(report_text(process_->stdout_text())).as_object();
  }

 private:
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
};

std::vector<std::byte> datagram(std::uint32_t seq, std::size_t size) {
  std::vector<std::byte> d(std::max<std::size_t>(size, 4));
  for (int i = 0; i < 4; ++i) d[static_cast<std::size_t>(i)] = static_cast<std::byte>(seq >> (8 * i));
  for (std::size_t i = 4; i < d.size(); ++i) d[i] = static_cast<std::byte>(seq * 7 + i);
  return d;
}

std::uint32_t seq_of(const std::vector<std::byte>& d) {
  std::uint32_t s = 0;
  for (int i = 0; i < 4; ++i) s |= std::to_integer<std::uint32_t>(d[static_cast<std::size_t>(i)]) << (8 * i);
  return s;
}

// Sends `count` datagrams with at most `window` unanswered, collects the echoes.
std::map<std::uint32_t, std::vector<std::byte>> exchange(int port, std::uint32_t count, std::size_t window,
                                                         std::chrono::milliseconds linger) {
  UdpSocket client;
  std::map<std::uint32_t, std::vector<std::byte>> got;
  std::uint32_t sent = 0;
  std::size_t outstanding = 0;
  while (sent < count) {
    while (outstanding < window && sent < count) {
      client.send_to(port, datagram(sent, 1 + (sent * 37) % 1400));
      ++sent;
      ++outstanding;
    }
    if (auto d = client.receive(linger)) {
      got.emplace(seq_of(*d), *d);
      --outstanding;
    } else {
      outstanding = 0;  // the rest of this window was lost
    }
  }
  while (auto d = client.receive(linger)) got.emplace(seq_of(*d), *d);
  return got;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<double> ping_ms(int port, int count, std::chrono::milliseconds timeout = 2000ms) {
  UdpSocket client;
  std::vector<double> rtts;
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    client.send_to(port, datagram(static_cast<std::uint32_t>(i), 64));
    if (client.receive(timeout))
      rtts.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return rtts;
}

// 5000 datagrams of many sizes through a relay run with `args`, 32 at a time:
// every one comes back intact, and the report counts each once per direction.
boost::json::object relays_every_datagram_intact(const std::vector<std::string>& args) {
  TempDir dir;
  UdpEchoServer echo;
  RunningRelay relay(dir, echo.port(), args);
  if (relay.port() == 0) return {};
  const std::uint32_t n = 5000;
  const auto got = exchange(relay.port(), n, 32, 500ms);
  EXPECT_EQ(got.size(), n);
  std::size_t damaged = 0;
  for (const auto& [seq, bytes] : got) damaged += bytes != datagram(seq, 1 + (seq * 37) % 1400) ? 1 : 0;
  EXPECT_EQ(damaged, 0u);
  auto report = relay.stop();
  EXPECT_EQ(u64(report.at("up").at("packets_in")), n);
  EXPECT_EQ(u64(report.at("up").at("packets_out")), n);
  EXPECT_EQ(u64(report.at("down").at("packets_out")), n);
  EXPECT_EQ(u64(report.at("send_failures")), 0u);
  return report;
}

}  // namespace

TEST(NetemRelay, WithoutImpairmentEveryDatagramArrivesIntact) {
  const auto report = relays_every_datagram_intact({});
  ASSERT_FALSE(report.empty());
  EXPECT_EQ(report.at("design").as_string(), "loop-per-thread");
  EXPECT_EQ(u64(report.at("threads")), 1u);
}

// The relay on a strand of a loop two threads run: the same datagrams, intact,
// and the report says which design ran (the ThreadSanitizer stage runs this).
TEST(ThreadPoolDesign, NetemRelaysEveryDatagramIntactOnTwoThreads) {
  const auto report = relays_every_datagram_intact({"--design", "thread-pool", "--threads", "2", "--up", "delay 1ms"});
  ASSERT_FALSE(report.empty());
  EXPECT_EQ(report.at("design").as_string(), "thread-pool");
  EXPECT_EQ(u64(report.at("threads")), 2u);
}

TEST(NetemRelay, AddsTheConfiguredDelayToTheRoundTrip) {
  TempDir dir;
  UdpEchoServer echo;
  RunningRelay relay(dir, echo.port(), {"--up", "delay 15ms", "--down", "delay 25ms"});
  ASSERT_NE(relay.port(), 0);
  const double direct = median(ping_ms(echo.port(), 30));
  const auto through = ping_ms(relay.port(), 30);
  ASSERT_EQ(through.size(), 30u);
  const double extra = median(through) - direct;
  EXPECT_GE(extra, 40.0 - 0.5);
  EXPECT_LE(extra, 40.0 + 5.0);  // timer wake-ups on a shared machine
  relay.stop();
}

TEST(NetemRelay, LossIsCountedAndTheSameSeedLosesTheSamePackets) {
  auto lost_set = [](std::uint64_t seed) {
    TempDir dir;
    UdpEchoServer echo;
    RunningRelay relay(dir, echo.port(), {"--up", "loss 20%", "--seed", std::to_string(seed)});
    const auto got = exchange(relay.port(), 2000, 64, 100ms);
    const auto report = relay.stop();
    EXPECT_EQ(u64(report.at("up").at("lost")) + u64(report.at("up").at("packets_out")),
              u64(report.at("up").at("packets_in")));
    EXPECT_EQ(u64(report.at("up").at("packets_in")), 2000u);
    EXPECT_EQ(got.size(), u64(report.at("down").at("packets_out")));
    std::set<std::uint32_t> lost;
    for (std::uint32_t s = 0; s < 2000; ++s)
      if (!got.count(s)) lost.insert(s);
    return lost;
  };
  const auto first = lost_set(7);
  EXPECT_NEAR(static_cast<double>(first.size()) / 2000, 0.20, 0.03);
  EXPECT_EQ(lost_set(7), first);
  EXPECT_NE(lost_set(8), first);
}

TEST(NetemRelay, Sigusr1CutsTheLinkAndRestoresIt) {
  TempDir dir;
  UdpEchoServer echo;
  RunningRelay relay(dir, echo.port(), {});
  ASSERT_NE(relay.port(), 0);
  EXPECT_EQ(ping_ms(relay.port(), 5).size(), 5u);
  // Each ping waits for the relay to say it has acted on the signal: a fixed
  // sleep stood in for that, and a relay slow to act failed the test.
  relay.signal(SIGUSR1);
  ASSERT_TRUE(relay.logged("netem: link down (SIGUSR1)", 1));
  EXPECT_EQ(ping_ms(relay.port(), 3, 300ms).size(), 0u);
  relay.signal(SIGUSR1);
  ASSERT_TRUE(relay.logged("netem: link up (SIGUSR1)", 1));
  EXPECT_EQ(ping_ms(relay.port(), 5).size(), 5u);
  const auto report = relay.stop();
  EXPECT_EQ(u64(report.at("up").at("link_down")), 3u);
}

TEST(NetemRelay, BadArgumentsAreRefusedClearly) {
  TempDir dir;
  ChildProcess bad_syntax({bin("volley"), "netem", "--forward", "127.0.0.1:9", "--up", "delay soon"}, dir.file("a"));
  EXPECT_EQ(bad_syntax.wait_for(10s).value_or(-1), 2);
  EXPECT_NE(bad_syntax.stderr_text().find("--up: delay needs a time"), std::string::npos);
  ChildProcess no_forward({bin("volley"), "netem"}, dir.file("b"));
  EXPECT_EQ(no_forward.wait_for(10s).value_or(-1), 2);
  EXPECT_NE(no_forward.stderr_text().find("--forward"), std::string::npos);
  ChildProcess bad_endpoint({bin("volley"), "netem", "--forward", "localhost"}, dir.file("c"));
  EXPECT_EQ(bad_endpoint.wait_for(10s).value_or(-1), 2);
  // More threads than the one loop of the loop-per-thread design.
  ChildProcess threads_without_pool({bin("volley"), "netem", "--forward", "127.0.0.1:9", "--threads", "2"},
                                    dir.file("d"));
  EXPECT_EQ(threads_without_pool.wait_for(10s).value_or(-1), 2);
  EXPECT_NE(threads_without_pool.stderr_text().find("--threads 2 needs --design thread-pool"), std::string::npos);
  ChildProcess no_such_design({bin("volley"), "netem", "--forward", "127.0.0.1:9", "--design", "fibers"},
                              dir.file("e"));
  EXPECT_NE(no_such_design.wait_for(10s).value_or(-1), 0);
  EXPECT_NE(no_such_design.stderr_text().find("--design"), std::string::npos);
}

class NetemTun : public ::testing::TestWithParam<std::string> {};

// The relay in either design (the parameter).
TEST_P(NetemTun, CarriesTcpThroughALossyCorruptingLinkIntact) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  struct stat st{};
  if (::stat("/dev/net/tun", &st) != 0) GTEST_SKIP() << "no /dev/net/tun";
  if (::access("/usr/sbin/ip", X_OK) != 0 && ::access("/sbin/ip", X_OK) != 0) GTEST_SKIP() << "no iproute2";

  TempDir dir;
  const std::string name = "vt" + std::to_string(::getpid());
  const std::string script = std::string(VOLLEY_SOURCE_DIR) + "/scripts/netem-tun.sh";
  const std::string bin_dir = VOLLEY_BIN_DIR;
  struct Teardown {
    std::string script, name, out;
    ~Teardown() { ChildProcess({"/bin/bash", script, "stop", "--name", name}, out).wait_for(30s); }
  } teardown{script, name, dir.file("stop")};

  ChildProcess start({"/bin/bash", script, "start", "--name", name, "--bin", bin_dir, "--seed", "3", "--up",
                      "delay 2ms loss 3% corrupt 1% duplicate 1%", "--down", "delay 2ms loss 3%", "--design",
                      GetParam()},
                     dir.file("start"));
  ASSERT_EQ(start.wait_for(60s).value_or(-1), 0) << start.stderr_text();

  ChildProcess target({"/usr/sbin/ip", "netns", "exec", name + "-b", bin("volley"), "target", "--bind", "198.18.0.2",
                       "--port", "0", "--port-file", dir.file("port"), "--reply", "ack-checksum", "--json",
                       "--no-progress"},
                      dir.file("target"));
  std::string port;
  for (int i = 0; i < 1000 && port.empty(); ++i) {
    port = read_file(dir.file("port"));
    if (port.empty()) std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(port.empty()) << target.stderr_text();
  port.erase(port.find_last_not_of("\n") + 1);

  ChildProcess gen({"/usr/sbin/ip", "netns", "exec", name + "-a", bin("traffic_generator"), "--host", "198.18.0.2",
                    "--port", port, "-m", "1001:64:50", "-m", "8001:1000:50", "--random-payload", "-t", "2", "--json",
                    "--no-progress"},
                   dir.file("gen"));
  ASSERT_EQ(gen.wait_for(90s).value_or(-1), 0) << gen.stderr_text();
  target.send_signal(SIGTERM);
  ASSERT_EQ(target.wait_for(30s).value_or(-1), 0) << target.stderr_text();

  const auto g = boost::json::parse(gen.stdout_text()).as_object();
  const auto t = boost::json::parse(report_text(target.stdout_text())).as_object();
  EXPECT_GT(u64(g.at("frames")), 1000u);
  EXPECT_EQ(u64(t.at("frames")), u64(g.at("frames")));
  EXPECT_EQ(u64(t.at("bytes")), u64(g.at("bytes")));
  EXPECT_EQ(u64(g.at("replies").at("ack_checksum")), u64(g.at("specs").at(0).at("frames")));
  EXPECT_EQ(u64(g.at("replies").at("checksum_mismatches")), 0u);

  // The link really was impaired: the relay counted losses and corruptions.
  ChildProcess stop({"/bin/bash", script, "stop", "--name", name}, dir.file("stop2"));
  ASSERT_EQ(stop.wait_for(30s).value_or(-1), 0);
  const auto relay = boost::json::parse(report_text(stop.stdout_text())).as_object();
  EXPECT_GT(u64(relay.at("up").at("lost")), 0u);
  EXPECT_GT(u64(relay.at("up").at("corrupted")), 0u);
  EXPECT_GT(u64(relay.at("down").at("lost")), 0u);
  EXPECT_EQ(relay.at("design").as_string(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Designs, NetemTun, ::testing::Values("loop-per-thread", "thread-pool"), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

// Per-client state is bounded: past --max-clients a new source's datagrams are
// dropped and counted (the relay used to open a socket for every source
// forever), and a client quiet for --client-idle is forgotten, making room.
TEST(NetemRelay, ClientsAreCappedAndForgottenWhenIdle) {
  TempDir dir;
  UdpEchoServer echo;
  RunningRelay relay(dir, echo.port(), {"--max-clients", "3", "--client-idle", "2"});
  ASSERT_NE(relay.port(), 0);
  std::vector<std::unique_ptr<UdpSocket>> clients;
  for (int i = 0; i < 5; ++i) clients.push_back(std::make_unique<UdpSocket>());
  for (int i = 0; i < 5; ++i) {
    clients[static_cast<std::size_t>(i)]->send_to(relay.port(), datagram(static_cast<std::uint32_t>(i), 32));
    const auto back = clients[static_cast<std::size_t>(i)]->receive(i < 3 ? 5000ms : 300ms);
    EXPECT_EQ(back.has_value(), i < 3) << "client " << i;
  }
  // Once the first three have been quiet for 2 s they are forgotten, one by
  // one: a new client's datagram forgets those already past the idle time
  // (only the first of them, when the others spoke a few milliseconds later),
  // and a sweep the rest. So three new clients, let in one after another
  // (polled: no fixed sleep to race against), show all three gone: the table
  // holds three, and the last one in finds the other two new ones there.
  clients.push_back(std::make_unique<UdpSocket>());
  for (std::size_t i = 3; i < 6; ++i) {
    bool through = false;
    for (int attempt = 0; attempt < 60 && !through; ++attempt) {
      clients[i]->send_to(relay.port(), datagram(static_cast<std::uint32_t>(100 + i), 32));
      through = clients[i]->receive(250ms).has_value();
    }
    EXPECT_TRUE(through) << "client " << i;
  }
  const auto report = relay.stop();
  const auto& c = report.at("clients").as_object();
  EXPECT_EQ(u64(c.at("opened")), 6u);
  // Three, unless the test itself stalled for 2 s and a new one went quiet too.
  EXPECT_GE(u64(c.at("expired")), 3u);
  EXPECT_EQ(u64(c.at("live")), u64(c.at("opened")) - u64(c.at("expired")));
  EXPECT_GE(u64(c.at("refused")), 2u);  // client 4's first datagram, client 3's while the three were live
}

// With almost no file descriptors, a new client costs its datagram, not the
// relay: it used to open each client's socket with a throwing call, and
// running out of descriptors ended the whole relay.
TEST(NetemRelay, SurvivesRunningOutOfDescriptors) {
  TempDir dir;
  UdpEchoServer echo;
  // The relay inherits this process's open descriptors: leave it room for
  // its own few (loop, timers, signals, listening socket) and a handful of clients.
  std::size_t inherited = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++inherited;
  const std::string limit = std::to_string(inherited + 12);
  if (kSanitizerBuild) GTEST_SKIP() << kDescriptorStarvationUnderSanitizers;
  RunningRelay relay(dir, echo.port(), {}, "relay", {"/usr/bin/prlimit", "--nofile=" + limit + ":" + limit, "--"});
  ASSERT_NE(relay.port(), 0);
  std::vector<std::unique_ptr<UdpSocket>> clients;
  int answered = 0;
  bool refused_one = false;
  for (int i = 0; i < 24; ++i) {
    clients.push_back(std::make_unique<UdpSocket>());
    clients.back()->send_to(relay.port(), datagram(static_cast<std::uint32_t>(i), 32));
    // Once one is refused the rest will be (no descriptor frees up): wait less for them.
    if (clients.back()->receive(refused_one ? 100ms : 500ms)) ++answered;
    else refused_one = true;
  }
  for (auto& c : clients)  // a reply slower than the wait above still counts
    if (c->receive(20ms)) ++answered;
  // The clients that got a socket keep being served.
  clients.front()->send_to(relay.port(), datagram(1000, 32));
  EXPECT_TRUE(clients.front()->receive(2000ms).has_value());
  const auto report = relay.stop();
  const auto& c = report.at("clients").as_object();
  EXPECT_GT(u64(c.at("refused")), 0u);
  EXPECT_GT(answered, 0);
  EXPECT_EQ(u64(c.at("opened")), static_cast<std::uint64_t>(answered));
  EXPECT_EQ(u64(c.at("opened")) + u64(c.at("refused")), 24u);
}
