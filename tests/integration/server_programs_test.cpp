// Every server program follows one convention: --port 0 picks a free port, a
// "listening <proto> <address>:<port>" line on stdout and --port-file say so,
// and a signal that arrives the instant it says so stops it cleanly, with its
// report, never by the signal's default action.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "child_process.hpp"
#include "raw_client.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;

struct ServerProgram {
  std::string name;
  std::string proto;  // what the listening line says
  std::vector<std::string> argv;  // after `volley`; --port-file is added
};

std::vector<ServerProgram> server_programs(const std::string& certs) {
  return {
      {"target", "tcp", {"target", "--bind", "127.0.0.1", "--port", "0", "--json", "--no-progress"}},
      {"echo-server-tcp", "tcp", {"echo-server", "--proto", "tcp", "--port", "0", "--json", "--no-progress"}},
      {"echo-server-udp", "udp", {"echo-server", "--proto", "udp", "--port", "0", "--json", "--no-progress"}},
      {"echo-server-tls", "tls",
       {"echo-server", "--proto", "tls", "--port", "0", "--json", "--no-progress", "--cert", certs + "/server.pem", "--key",
        certs + "/server.key"}},
      {"pingpong-server", "tcp", {"pingpong-server", "--port", "0", "--json", "--no-progress"}},
      {"rpc-server", "tcp", {"rpc-server", "--bind", "127.0.0.1", "--port", "0", "--json"}},
      {"netem", "udp", {"netem", "--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9", "--json", "--no-progress"}},
      {"arq-recv", "udp", {"arq-recv", "--listen", "127.0.0.1:0", "--json"}},
  };
}

std::string make_certs(const TempDir& dir) {
  ChildProcess p({std::string(VOLLEY_SOURCE_DIR) + "/scripts/make-test-certs.sh", dir.file("certs")}, dir.file("certs-log"));
  EXPECT_EQ(p.wait_for(60s).value_or(-1), 0) << p.stderr_text();
  return dir.file("certs");
}

// Starts the program and waits for its listening line, polling fast so the
// caller can act within a fraction of a millisecond of the announcement.
struct Started {
  std::unique_ptr<ChildProcess> process;
  // From "listening <proto> <address>:<port>\n"; proto empty when the line is not that.
  std::string proto;
  std::string address;
  int port = 0;
  std::string stdout_text;
};

Started start(const TempDir& dir, const ServerProgram& p, const std::string& tag) {
  std::vector<std::string> argv{bin("volley")};
  argv.insert(argv.end(), p.argv.begin(), p.argv.end());
  argv.insert(argv.end(), {"--port-file", dir.file(tag + ".port")});
  Started s;
  s.process = std::make_unique<ChildProcess>(argv, dir.file(tag));
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    s.stdout_text = s.process->stdout_text();
    if (s.stdout_text.find('\n') != std::string::npos) break;
    if (s.process->wait_for(0ms)) break;
    std::this_thread::sleep_for(100us);
  }
  // "listening " PROTO " " ADDRESS ":" PORT "\n", nothing else on the line.
  const auto eol = s.stdout_text.find('\n');
  const std::string line = s.stdout_text.substr(0, eol);
  const auto space = line.find(' ', 10);
  const auto colon = line.rfind(':');
  if (eol != std::string::npos && line.rfind("listening ", 0) == 0 && space != std::string::npos &&
      colon != std::string::npos && colon > space && colon + 1 < line.size() &&
      line.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    s.proto = line.substr(10, space - 10);
    s.address = line.substr(space + 1, colon - space - 1);
    s.port = std::stoi(line.substr(colon + 1));
  }
  return s;
}

TEST(ServerPrograms, AnnounceTheirPortOnStdoutAndInThePortFile) {
  TempDir dir;
  for (const auto& p : server_programs(make_certs(dir))) {
    SCOPED_TRACE(p.name);
    Started s = start(dir, p, p.name);
    ASSERT_FALSE(s.proto.empty()) << "no listening line: " << s.stdout_text << s.process->stderr_text();
    EXPECT_EQ(s.proto, p.proto);
    EXPECT_EQ(s.address, "127.0.0.1");  // every program here is bound to loopback
    const int port = s.port;
    EXPECT_GT(port, 0);
    // The port file is written before the line is printed, whole.
    EXPECT_EQ(read_file(dir.file(p.name + ".port")), std::to_string(port) + "\n");
    s.process->send_signal(SIGTERM);
    const auto code = s.process->wait_for(20s);
    ASSERT_TRUE(code.has_value()) << "did not stop after SIGTERM";
    EXPECT_NE(*code, 128 + SIGTERM) << "killed by the signal instead of stopping: " << s.process->stderr_text();
    EXPECT_NE(report_text(s.process->stdout_text()).find("\"tool\""), std::string::npos) << s.process->stdout_text();
  }
}

// The race the convention closes: a supervisor (or a test) signals a server
// (SIGTERM, SIGINT or SIGHUP) the moment it announces itself. Before net::Server, the listening line came
// before the signal handler and such a SIGTERM killed the process (exit 143).
TEST(ServerPrograms, ASignalTheInstantTheyAnnounceThemselvesStopsThemCleanly) {
  TempDir dir;
  const auto programs = server_programs(make_certs(dir));
  // The race is in the programs' start-up order, not in memory: the sanitizer
  // builds, whose every start costs ten times as much, run a quarter of it.
  constexpr int kRounds = kSanitizerBuild ? 10 : 40;
  for (int round = 0; round < kRounds; ++round) {
    for (const auto& p : programs) {
      SCOPED_TRACE(p.name + " round " + std::to_string(round));
      // SIGHUP too (a closed terminal or session): before it was handled it
      // ended every program at once, with no report.
      const int signo = std::array{SIGTERM, SIGINT, SIGHUP}[static_cast<std::size_t>(round) % 3];
      Started s = start(dir, p, p.name + "-" + std::to_string(round));
      ASSERT_FALSE(s.proto.empty()) << "no listening line: " << s.stdout_text << s.process->stderr_text();
      s.process->send_signal(signo);
      const auto code = s.process->wait_for(20s);
      ASSERT_TRUE(code.has_value()) << "did not stop";
      EXPECT_NE(*code, 128 + signo) << "killed by the signal: " << s.process->stderr_text();
      EXPECT_NE(report_text(s.process->stdout_text()).find("\"tool\""), std::string::npos)
          << "no report: " << s.process->stdout_text();
    }
  }
}

// A reader of a server's output that goes away (`volley target | head -1`)
// must not kill it: writes to it fail instead, and the server stops with its
// usual status. Before SIGPIPE was ignored, each program died of SIGPIPE (exit
// 141) at the first line it wrote after the reader had gone: here its stop's
// log line and report.
TEST(ServerPrograms, AReaderOfTheirOutputThatGoesAwayDoesNotKillThem) {
  TempDir dir;
  for (const auto& p : server_programs(make_certs(dir))) {
    SCOPED_TRACE(p.name);
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    std::vector<std::string> argv{bin("volley")};
    argv.insert(argv.end(), p.argv.begin(), p.argv.end());
    ChildProcess server(argv, dir.file(p.name), fds[1]);
    ::close(fds[1]);
    // Read up to the listening line (log lines may come first; an error that
    // ends the program ends the pipe), then the reader goes, as head does.
    std::string text;
    char c = 0;
    while (text.find("listening ") == std::string::npos || c != '\n') {
      if (::read(fds[0], &c, 1) != 1) break;
      text += c;
    }
    ::close(fds[0]);
    ASSERT_NE(text.find("listening "), std::string::npos) << text;
    server.send_signal(SIGTERM);
    const auto code = server.wait_for(20s);
    ASSERT_TRUE(code.has_value()) << "did not stop";
    // Its usual status (arq-recv's is 1 for a run that a signal interrupted),
    // never a signal's.
    EXPECT_LT(*code, 128) << (*code == 128 + SIGPIPE ? "killed by SIGPIPE" : "killed by a signal");
  }
}

TEST(ServerPrograms, AnUnwritablePortFileIsAnErrorNotASilentWait) {
  TempDir dir;
  ChildProcess p({bin("volley"), "target", "--bind", "127.0.0.1", "--port", "0", "--no-progress", "--port-file",
                  dir.file("no-such-folder/port")},
                 dir.file("target"));
  const auto code = p.wait_for(20s);
  ASSERT_TRUE(code.has_value()) << "kept running without its port file";
  EXPECT_NE(*code, 0);
  EXPECT_NE(p.stderr_text().find("cannot write --port-file"), std::string::npos) << p.stderr_text();
}

}  // namespace
}  // namespace volley::test

namespace volley::test {
namespace {

std::size_t count_lines_with(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Out of descriptors, a pending connection keeps the listener readable: the
// server used to retry the accept at once, burning a core and logging every
// failure (millions of lines). Now it refuses pending connections one at a
// time with a reserve descriptor, pauses between tries, warns rarely, counts
// the refusals, and serves again once descriptors free up.
TEST(ServerPrograms, OutOfDescriptorsTheyRefuseAndRecoverInsteadOfSpinning) {
  TempDir dir;
  std::size_t inherited = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++inherited;
  const std::string limit = std::to_string(inherited + 20);
  if (kSanitizerBuild) GTEST_SKIP() << kDescriptorStarvationUnderSanitizers;
  ChildProcess server({"/usr/bin/prlimit", "--nofile=" + limit + ":" + limit, "--", bin("volley"), "echo-server",
                       "--port", "0", "--json", "--no-progress", "--port-file", dir.file("port")},
                      dir.file("server"));
  const int port = wait_for_port_file(dir.file("port"), server);
  ASSERT_GT(port, 0) << server.stderr_text();
  {
    std::vector<std::unique_ptr<RawClient>> clients;
    for (int i = 0; i < 60; ++i) clients.push_back(std::make_unique<RawClient>(port));
    // Let the server sit out of descriptors for a while with connections pending.
    for (int i = 0; i < 100 && count_lines_with(server.stderr_text(), "refusing connections") == 0; ++i)
      std::this_thread::sleep_for(20ms);
    std::this_thread::sleep_for(1s);
    // The connections it took are served meanwhile.
    const std::vector<std::byte> ping(16, std::byte{7});
    clients.front()->send(ping);
    EXPECT_EQ(clients.front()->read(ping.size()), ping);
  }
  // Descriptors free again: a new client is served.
  bool served = false;
  for (int attempt = 0; attempt < 100 && !served; ++attempt) {
    RawClient client(port);
    const std::vector<std::byte> ping(8, std::byte{9});
    client.send(ping);
    served = client.read(ping.size()) == ping;
    if (!served) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(served);
  server.send_signal(SIGTERM);
  ASSERT_EQ(server.wait_for(20s).value_or(-1), 0) << server.stderr_text();
  const auto report = boost::json::parse(report_text(server.stdout_text())).as_object();
  EXPECT_GT(boost::json::value_to<std::uint64_t>(report.at("refused_connections")), 0u);
  // One warning, and one per thousand refusals after it; never a line per failed accept.
  const std::string log = server.stderr_text();
  EXPECT_LE(count_lines_with(log, "accept failed"), 3u) << log.substr(0, 2000);
}

}  // namespace
}  // namespace volley::test

namespace volley::test {
namespace {

// A peer that stops reading used to keep a stopping server flushing forever
// (SIGTERM never finished, no report). Now the stop is bounded by
// --shutdown-timeout: what is still open then is aborted, counted, and its
// unsent bytes reported.
TEST(ServerPrograms, AStopIsBoundedWhenAPeerStopsReading) {
  TempDir dir;
  // A high-water mark far above what the kernel buffers hold, so the echoes
  // of what we send pile up in the server's queue, certainly unflushable.
  ChildProcess server({bin("volley"), "pingpong-server", "--port", "0", "--json", "--no-progress", "--framing", "checked",
                       "--max-queued", std::to_string(256 << 20),
                       "--heartbeat-ms", "0", "--shutdown-timeout", "1", "--port-file", dir.file("port")},
                      dir.file("server"));
  const int port = wait_for_port_file(dir.file("port"), server);
  ASSERT_GT(port, 0) << server.stderr_text();

  RawClient client(port);
  constexpr std::size_t kPayload = 60'000, kFrames = 800;  // 48 MB, of which at most ~20 MB fit in kernel buffers
  std::vector<std::byte> frame(5 + kPayload, std::byte{0x5a});
  frame[0] = std::byte{static_cast<unsigned char>(frame.size() >> 16)};
  frame[1] = std::byte{static_cast<unsigned char>(frame.size() >> 8)};
  frame[2] = std::byte{static_cast<unsigned char>(frame.size())};
  frame[3] = std::byte{1};
  frame[4] = std::byte{0};  // XOR of an even number of equal bytes
  std::atomic<std::size_t> sent{0};
  std::thread sender([&] {
    try {
      for (std::size_t i = 0; i < kFrames; ++i, sent.fetch_add(1)) client.send(frame);
    } catch (const std::exception&) {  // the server aborted the connection: expected once it stops
    }
  });
  for (int i = 0; i < 3000 && sent.load() < kFrames; ++i) std::this_thread::sleep_for(10ms);
  if (sent.load() < kFrames) {
    server.send_signal(SIGKILL);  // resets the connection, so the sender's blocked send returns
    sender.join();
    FAIL() << "the server stopped reading before its high-water mark: " << sent.load() << " frames sent";
  }

  server.send_signal(SIGTERM);
  const auto code = server.wait_for(30s);
  if (!code) server.send_signal(SIGKILL);
  sender.join();  // done sending already; joined before any assertion can return
  client.close();
  ASSERT_TRUE(code.has_value()) << "the stop was not bounded by --shutdown-timeout";
  EXPECT_EQ(*code, 0) << server.stderr_text();
  const auto report = boost::json::parse(report_text(server.stdout_text())).as_object();
  EXPECT_EQ(boost::json::value_to<std::uint64_t>(report.at("aborted_at_shutdown")), 1u);
  EXPECT_GT(boost::json::value_to<std::uint64_t>(report.at("unsent_bytes")), 20'000'000u);
}

}  // namespace
}  // namespace volley::test
