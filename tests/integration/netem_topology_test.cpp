// The multi-host test bed (scripts/netem-topology.sh, root only): three
// server hosts and two client hosts, each client linked to each server
// through `volley netem tun`. An RpcClient runs on each client host (a thread
// that entered the host's network namespace) and calls through the replay
// policy while the link of the server host it uses is cut for 5 s: every
// call is answered, in the order made, and the cut client's failover is
// counted; once the link is back, the client returns to its own server, so
// the two spread over two servers again. The script's own rules are checked too: a bad file is refused
// with its line, and down leaves nothing behind.
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <volley/rpc/client.hpp>

#include "benchmark_messages.hpp"
#include "child_process.hpp"
#include "run_until.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

const std::string kScript = std::string(VOLLEY_SOURCE_DIR) + "/scripts/netem-topology.sh";

std::string why_not_runnable() {
  if (::geteuid() != 0) return "needs root";
  struct stat st{};
  if (::stat("/dev/net/tun", &st) != 0) return "no /dev/net/tun";
  if (::access("/usr/sbin/ip", X_OK) != 0 && ::access("/sbin/ip", X_OK) != 0) return "no iproute2";
  return {};
}

// A topology that is up for the test's life and down after it, whatever happens.
class Topology {
 public:
  Topology(const TempDir& dir, const std::string& text) : dir_(dir), name_("vtopo" + std::to_string(::getpid())) {
    std::ofstream(dir.file("topology")) << text;
    ChildProcess up({"/bin/bash", kScript, "up", dir.file("topology"), "--name", name_, "--bin", VOLLEY_BIN_DIR},
                    dir.file("up"));
    up_code_ = up.wait_for(60s).value_or(-1);
    up_err_ = up.stderr_text();
  }
  ~Topology() { down(); }
  bool up() const { return up_code_ == 0; }
  const std::string& up_error() const { return up_err_; }
  const std::string& name() const { return name_; }
  int down() {
    if (down_) return 0;
    down_ = true;
    ChildProcess down({"/bin/bash", kScript, "down", "--name", name_}, dir_.file("down"));
    const int code = down.wait_for(60s).value_or(-1);
    links_report_ = down.stdout_text();
    return code;
  }
  // What down printed: "HOST HOST: {the link's relay report}" a line.
  const std::string& links_report() const { return links_report_; }
  std::vector<std::string> exec(const std::string& host, std::vector<std::string> command) const {
    std::vector<std::string> argv{"/bin/bash", kScript, "exec", host, "--name", name_, "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }
  int run(const std::string& verb, const std::string& host) const {
    ChildProcess p({"/bin/bash", kScript, verb, host, "--name", name_}, dir_.file(verb + "-" + host));
    return p.wait_for(30s).value_or(-1);
  }

 private:
  const TempDir& dir_;
  std::string name_;
  int up_code_ = -1;
  std::string up_err_;
  bool down_ = false;
  std::string links_report_;
};

// Calls Ping{base + i} every 2 ms from inside a host's network namespace
// until told to stop, through the replay policy, round-robin over `servers`.
struct NamespacedCaller {
  NamespacedCaller(const std::string& netns, std::vector<std::string> servers, std::uint64_t seed, std::int64_t base)
      : thread([this, netns, servers = std::move(servers), seed, base] { run(netns, servers, seed, base); }) {}
  ~NamespacedCaller() {
    stop = true;
    if (thread.joinable()) thread.join();
  }

  void run(const std::string& netns, const std::vector<std::string>& servers, std::uint64_t seed, std::int64_t base) {
    const int fd = ::open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {  // this thread only: its sockets are the host's
      setup_failed = true;
      done = true;
      return;
    }
    ::close(fd);
    asio::io_context loop;
    rpc::RpcClient client(loop);
    net::ReconnectingClientOptions o;
    o.servers = servers;
    o.server_policy = net::ServerPolicy::round_robin;
    o.jitter_seed = seed;
    o.backoff = {.initial = 50ms, .maximum = 500ms};
    o.connect_timeout = 1s;
    o.session.heartbeat_interval = 500ms;  // a cut link is noticed after 3 silent intervals
    o.outbox_messages = 100000;
    o.return_home_after = 500ms;  // back to its own server once that takes connections again
    client.start(o, rpc::InFlightPolicy::replay);
    std::int64_t made = 0;
    asio::steady_timer tick(loop);
    const auto started = std::chrono::steady_clock::now();
    std::uint64_t disconnects_seen = 0;
    std::function<void()> call_more = [&] {
      if (stop) return;
      returns = client.reconnect_stats()->returns;
      if (client.reconnect_stats()->disconnects != disconnects_seen) {  // when, and why, for the report
        disconnects_seen = client.reconnect_stats()->disconnects;
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
        closes += std::to_string(ms.count()) + " ms: " + client.last_remote_error() + "; ";
      }
      const std::int64_t t = base + made++;
      client.call<benchmarks::Pong>(1, 2, benchmarks::Ping{t}, 60s, [&, t](const std::error_code& ec, benchmarks::Pong p) {
        if (ec || p.t != t) ++errors;
        if (!answered.empty() && answered.back() > t) ++out_of_order;
        answered.push_back(t);
      });
      tick.expires_after(2ms);
      tick.async_wait([&](const boost::system::error_code& ec) {
        if (!ec) call_more();
      });
    };
    call_more();
    run_until(loop, [&] { return stop.load(); }, 120s);
    tick.cancel();
    calls = made;
    run_until(loop, [&] { return static_cast<std::int64_t>(answered.size()) == made; }, 30s);
    failovers = client.reconnect_stats()->failovers;
    for (const auto& s : client.reconnect_stats()->servers) used.push_back(s.address + " x" + std::to_string(s.connects));
    client.close();
    done = true;
  }

  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  bool setup_failed = false;
  std::vector<std::int64_t> answered;
  std::int64_t calls = 0;
  int errors = 0;
  int out_of_order = 0;
  std::uint64_t failovers = 0;
  std::atomic<std::uint64_t> returns{0};  // to its own server, after a failover
  std::string closes;  // when each connection closed (from the start), and why
  std::vector<std::string> used;
  std::thread thread;
};

TEST(NetemTopology, AServerHostCutForFiveSecondsCostsNoCallWithReplayAndItsClientFailsOver) {
  if (const std::string why = why_not_runnable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  Topology topology(dir,
                    "# three server hosts, two client hosts\n"
                    "host s1\nhost s2\nhost s3\nhost c1\nhost c2\n"
                    "link c1 s1 delay 1ms\nlink c1 s2 delay 1ms\nlink c1 s3 delay 1ms\n"
                    "link c2 s1 delay 1ms\nlink c2 s2 delay 1ms\nlink c2 s3 delay 1ms\n");
  ASSERT_TRUE(topology.up()) << topology.up_error();

  std::vector<std::unique_ptr<ChildProcess>> servers;
  for (const char* host : {"s1", "s2", "s3"}) {
    servers.push_back(std::make_unique<ChildProcess>(
        topology.exec(host, {bin("volley"), "rpc-server", "--bind", "0.0.0.0", "-p", "7100", "--json"}),
        dir.file(std::string("rpc-") + host)));
  }
  for (auto& s : servers) {
    for (int i = 0; i < 1000 && s->stdout_text().find("listening") == std::string::npos; ++i) std::this_thread::sleep_for(10ms);
    ASSERT_NE(s->stdout_text().find("listening"), std::string::npos) << s->stderr_text();
  }
  const std::vector<std::string> addresses{"198.19.0.1:7100", "198.19.0.2:7100", "198.19.0.3:7100"};
  // Round-robin from seeds 0 and 1: c1 starts on s1, c2 on s2.
  NamespacedCaller c1(topology.name() + "-c1", addresses, 0, 0);
  NamespacedCaller c2(topology.name() + "-c2", addresses, 1, 1'000'000);
  std::this_thread::sleep_for(1500ms);
  ASSERT_EQ(topology.run("cut", "s1"), 0);
  std::this_thread::sleep_for(5s);
  ASSERT_EQ(topology.run("heal", "s1"), 0);
  for (int i = 0; i < 1000 && c1.returns == 0; ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(500ms);  // calls on s1 again
  c1.stop = true;
  c2.stop = true;
  c1.thread.join();
  c2.thread.join();

  for (const NamespacedCaller* c : {&c1, &c2}) {
    ASSERT_FALSE(c->setup_failed);
    std::string used;
    for (const auto& u : c->used) used += u + "; ";
    std::cout << "[ caller   ] " << c->answered.size() << " of " << c->calls << " calls answered, " << c->failovers
              << " failovers; servers: " << used << "closed: " << c->closes << "\n";
    EXPECT_GT(c->calls, 1000);
    EXPECT_EQ(static_cast<std::int64_t>(c->answered.size()), c->calls) << "replay: every call answered";
    EXPECT_EQ(c->errors, 0);
    EXPECT_EQ(c->out_of_order, 0) << "answered in the order made";
  }
  EXPECT_EQ(c1.failovers, 2u) << "c1's server host was cut: it went on with another, and came back";
  EXPECT_EQ(c1.returns, 1u) << "c1 went back to s1 once its link was healed";
  EXPECT_EQ(c2.returns, 0u);
  EXPECT_EQ(c2.failovers, 0u) << "c2's server was never cut; s2 said: " << servers[1]->stderr_text();
  for (auto& s : servers) s->send_signal(SIGTERM);
  for (auto& s : servers) EXPECT_EQ(s->wait_for(30s).value_or(-1), 0) << s->stderr_text();
  EXPECT_EQ(topology.down(), 0);
  // The cut was the relays' doing: the links of s1 dropped packets as link_down, the others none.
  std::istringstream lines(topology.links_report());
  int links = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto brace = line.find('{');
    if (brace == std::string::npos) continue;
    ++links;
    const auto report = boost::json::parse(line.substr(brace)).as_object();
    const auto dropped = boost::json::value_to<std::uint64_t>(report.at("up").at("link_down")) +
                         boost::json::value_to<std::uint64_t>(report.at("down").at("link_down"));
    if (line.find(" s1:") != std::string::npos)
      EXPECT_GT(dropped, 0u) << line;
    else
      EXPECT_EQ(dropped, 0u) << line;
  }
  EXPECT_EQ(links, 6) << topology.links_report();
}

TEST(NetemTopology, ABadFileIsRefusedWithItsLineAndDownLeavesNothingBehind) {
  if (const std::string why = why_not_runnable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  {
    Topology bad(dir, "host a\nhost b\nlink a c delay 1ms\n");
    EXPECT_FALSE(bad.up());
    EXPECT_NE(bad.up_error().find(":3: no host 'c' named before this link"), std::string::npos) << bad.up_error();
  }
  Topology topology(dir, "host a\nhost b\nlink a b\n");
  ASSERT_TRUE(topology.up()) << topology.up_error();
  ChildProcess no_host(topology.exec("z", {"/bin/true"}), dir.file("z"));
  EXPECT_NE(no_host.wait_for(10s).value_or(0), 0);
  EXPECT_NE(no_host.stderr_text().find("no host 'z'"), std::string::npos) << no_host.stderr_text();
  ChildProcess in_a(topology.exec("a", {"/usr/sbin/ip", "-o", "addr", "show", "dev", "lo"}), dir.file("a"));
  ASSERT_EQ(in_a.wait_for(10s).value_or(-1), 0);
  EXPECT_NE(in_a.stdout_text().find("198.19.0.1/32"), std::string::npos) << in_a.stdout_text();
  EXPECT_EQ(topology.down(), 0);
  struct stat st{};
  EXPECT_NE(::stat(("/run/netns/" + topology.name() + "-a").c_str(), &st), 0) << "a namespace was left behind";
  EXPECT_NE(::stat(("/tmp/" + topology.name() + ".topology").c_str(), &st), 0) << "the state was left behind";
}

}  // namespace
}  // namespace volley::test
