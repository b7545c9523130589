// `volley echo-server` and `volley echo-client` as processes on loopback, over
// TCP, TLS and UDP: every byte back intact, counts that agree, refusals that say why.
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "child_process.hpp"
#include "echo_fixture.hpp"
#include "http_client.hpp"
#include "listening_server.hpp"
#include "metrics_scrape.hpp"
#include "raw_client.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;

TEST(Echo, TcpEchoesEveryByteAndTheCountsAgree) {
  TempDir dir;
  EchoServer server(dir, {"-t", "2"});
  const auto r = run_client(dir, server.port(), {"-c", "4", "-t", "2", "-m", "100", "-s", "64", "-z", "1"});
  expect_clean_run(r, 64);
  const auto totals = server.stop();
  EXPECT_EQ(json_u64(totals, "bytes"), json_u64(r.report, "total_bytes"));
  EXPECT_EQ(json_u64(totals, "connections"), 4u);
  EXPECT_EQ(json_u64(totals, "errors"), 0u);
}

TEST(Echo, TcpClientThatReadsLateGetsEveryByteBack) {
  TempDir dir;
  EchoServer server(dir, {});
  RawClient client(server.port());
  std::vector<std::byte> data(24 << 20);  // more than the server queues (4 MiB) plus the kernel's buffers
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte{static_cast<unsigned char>(i % 251)};
  std::thread writer([&] { client.send(data); });
  std::this_thread::sleep_for(300ms);
  const auto got = client.read(data.size());
  writer.join();
  EXPECT_EQ(got.size(), data.size());
  EXPECT_TRUE(got == data);
  client.close();
  EXPECT_EQ(json_u64(server.stop(), "bytes"), data.size());
}

TEST(Echo, UdpEchoesEveryDatagram) {
  TempDir dir;
  EchoServer server(dir, {"--proto", "udp", "-t", "2"});
  // A loss timeout far above the 200 ms default: a sanitizer build on two busy
  // CPUs can leave the server unscheduled for longer (the whole 50-datagram
  // window of one client was once given up on that way, and echoed after).
  const auto r = run_client(dir, server.port(), {"--proto", "udp", "-c", "4", "-t", "2", "-m", "50", "-s", "100", "-z",
                                                 "1", "--loss-timeout", "5000"});
  expect_clean_run(r, 100);
  EXPECT_EQ(json_u64(r.report, "lost"), 0u);
  const auto totals = server.stop();
  EXPECT_EQ(json_u64(totals, "datagrams"), json_u64(r.report, "total_messages"));
}

TEST(Echo, UdpCountsLossInsteadOfWaitingForever) {
  TempDir dir;
  // Nobody listens on this port: every datagram is lost; the client must say so and finish.
  EchoServer server(dir, {"--proto", "udp"});
  const int port = server.port();
  server.stop();
  const auto r = run_client(dir, port, {"--proto", "udp", "-c", "1", "-m", "10", "-z", "0.5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_GT(json_u64(r.report, "errors"), 0u);
  EXPECT_EQ(json_u64(r.report, "total_messages"), 0u);
}

// A server that cannot keep up loses datagrams in the kernel, where no counter
// of its own sees them; its report reads the socket's drop count.
TEST(Echo, UdpDatagramsTheKernelDroppedAreCounted) {
  TempDir dir;
  EchoServer server(dir, {"--proto", "udp", "-t", "1"});
  ASSERT_EQ(::kill(server.process().pid(), SIGSTOP), 0);  // reads nothing while stopped
  boost::asio::io_context loop;
  boost::asio::ip::udp::socket flood(loop, boost::asio::ip::udp::endpoint(boost::asio::ip::udp::v4(), 0));
  const boost::asio::ip::udp::endpoint to(boost::asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(server.port()));
  const std::vector<std::byte> datagram(1400, std::byte{7});
  constexpr std::uint64_t kSent = 20000;  // 28 MB: far more than a socket's receive buffer
  for (std::uint64_t i = 0; i < kSent; ++i) flood.send_to(boost::asio::buffer(datagram), to);
  ASSERT_EQ(::kill(server.process().pid(), SIGCONT), 0);
  const auto totals = server.stop();
  const std::uint64_t drops = json_u64(totals, "kernel_drops");
  EXPECT_GT(drops, 0u);
  EXPECT_LE(drops + json_u64(totals, "datagrams"), kSent);
}

TEST(Echo, TlsEchoesWithAVerifiedServer) {
  TempDir dir;
  const std::string certs = make_certs(dir);
  EchoServer server(dir, {"--proto", "tls", "--cert", certs + "/server.pem", "--key", certs + "/server.key"});
  for (const char* version : {"1.3", "1.2"}) {
    const auto r = run_client(dir, server.port(), {"--proto", "tls", "--ca", certs + "/ca.pem", "--tls-version", version,
                                                   "-c", "3", "-m", "200", "-s", "32", "-z", "0.5"});
    expect_clean_run(r, 32);
  }
  const auto totals = server.stop();
  EXPECT_EQ(json_u64(totals, "connections"), 6u);
  EXPECT_EQ(json_u64(totals, "handshake_failures"), 0u);
}

TEST(Echo, TlsClientWithTheWrongCaIsRefusedClearly) {
  TempDir dir;
  const std::string certs = make_certs(dir);
  EchoServer server(dir, {"--proto", "tls", "--cert", certs + "/server.pem", "--key", certs + "/server.key"});
  const auto r = run_client(dir, server.port(), {"--proto", "tls", "--ca", certs + "/other-ca.pem", "-c", "2", "-z", "0.5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(json_u64(r.report, "errors"), 2u);
  EXPECT_NE(r.log.find("certificate verify failed"), std::string::npos) << r.log;
  // Plain TCP to a TLS port is a failed handshake on the server, not a hang.
  const auto plain = run_client(dir, server.port(), {"-c", "1", "-z", "0.3"});
  EXPECT_NE(plain.exit_code, 0);
  // --insecure skips verification, and says so.
  const auto insecure = run_client(dir, server.port(), {"--proto", "tls", "--insecure", "-c", "1", "-z", "0.3"});
  EXPECT_EQ(insecure.exit_code, 0) << insecure.log;
  EXPECT_NE(insecure.log.find("NOT verified"), std::string::npos);
  const auto totals = server.stop();
  EXPECT_GE(json_u64(totals, "handshake_failures"), 3u);
  EXPECT_NE(server.log().find("TLS handshake failed"), std::string::npos);
}

// A client that opens a TLS connection and never starts its handshake holds a
// descriptor until the server's handshake deadline closes it, counted.
TEST(Echo, ATlsClientThatNeverHandshakesIsClosedAtTheDeadline) {
  TempDir dir;
  const std::string certs = make_certs(dir);
  EchoServer server(dir, {"--proto", "tls", "--cert", certs + "/server.pem", "--key", certs + "/server.key",
                          "--handshake-timeout", "0.5"});
  RawClient silent(server.port());
  EXPECT_TRUE(silent.peer_closed());  // within RawClient's 5 s
  const auto totals = server.stop();
  EXPECT_EQ(json_u64(totals, "handshake_failures"), 1u);
  EXPECT_NE(server.log().find("timed out"), std::string::npos) << server.log();
}

TEST(Echo, AClientKilledMidRunLeavesTheServerServingOthers) {
  TempDir dir;
  EchoServer server(dir, {"--metrics", "127.0.0.1:0"});
  const int mport = metrics_port(server.process());
  ASSERT_GT(mport, 0) << server.process().stdout_text();
  ChildProcess doomed({bin("volley"), "echo-client", "-p", std::to_string(server.port()), "-c", "10", "-z", "30",
                       "--no-progress"},
                      dir.file("doomed"));
  // Killed once all ten are connected and echoing (a fixed sleep used to stand
  // in for that, and under load the count below came out short).
  ASSERT_TRUE(wait_for_metric(mport, "volley_connections_opened_total", [](double n) { return n >= 10; }, 60s));
  ASSERT_TRUE(wait_for_metric(mport, "volley_echoed_bytes_total", [](double n) { return n > 0; }, 60s));
  doomed.send_signal(SIGKILL);
  doomed.wait_for(10s);
  ASSERT_TRUE(server.running());
  const auto r = run_client(dir, server.port(), {"-c", "2", "-m", "100", "-z", "0.5"});
  expect_clean_run(r, 32);
  EXPECT_EQ(json_u64(server.stop(), "connections"), 12u);
}

TEST(Echo, AThousandConcurrentTcpConnections) {
  TempDir dir;
  EchoServer server(dir, {"-t", "2"});
  const auto r = run_client(dir, server.port(), {"-c", "1000", "-t", "2", "-m", "4", "-z", "1"});
  expect_clean_run(r, 32);
  EXPECT_EQ(json_u64(server.stop(), "connections"), 1000u);
}

TEST(Echo, RttModeTimesEveryRoundTripAndBusyPollWorks) {
  TempDir dir;
  for (const bool busy : {false, true}) {
    std::vector<std::string> server_args;
    if (busy) server_args.push_back("--busy-poll");
    EchoServer server(dir, server_args, busy ? "busy-server" : "server");
    std::vector<std::string> args{"-c", "1", "--rtt", "-z", "0.3"};
    if (busy) args.push_back("--busy-poll");
    const auto r = run_client(dir, server.port(), args);
    expect_clean_run(r, 32);
    const auto& rtt = r.report.at("rtt_ns").as_object();
    const auto count = json_u64(rtt, "count");
    // Not a speed check: two spinning processes on a loaded machine may share
    // a CPU, a time slice per round trip (10 in 0.3 s were seen). Timed they must all be.
    EXPECT_GE(count, 1u);
    EXPECT_EQ(count, json_u64(r.report, "total_messages"));
    EXPECT_LE(json_u64(rtt, "min"), json_u64(rtt, "p50"));
    EXPECT_LE(json_u64(rtt, "p50"), json_u64(rtt, "p99"));
    EXPECT_LE(json_u64(rtt, "p99"), json_u64(rtt, "max"));
    server.stop();
  }
}

TEST(Echo, HelpDescribesEveryFlagAndBadFlagsFail) {
  TempDir dir;
  ChildProcess help({bin("volley"), "echo-client", "--help"}, dir.file("help"));
  ASSERT_EQ(help.wait_for(20s).value_or(-1), 0);
  for (const char* flag : {"--proto", "--address", "--port", "--threads", "--clients", "--messages", "--size", "--duration",
                           "--rtt", "--busy-poll", "--ca", "--insecure", "--tls-version", "--json"})
    EXPECT_NE(help.stdout_text().find(flag), std::string::npos) << flag;
  ChildProcess server_help({bin("volley"), "echo-server", "--help"}, dir.file("server-help"));
  ASSERT_EQ(server_help.wait_for(20s).value_or(-1), 0);
  for (const char* flag : {"--proto", "--port", "--threads", "--busy-poll", "--design", "--metrics", "--cert", "--key",
                           "--json"})
    EXPECT_NE(server_help.stdout_text().find(flag), std::string::npos) << flag;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"echo-client", "--proto", "quic"}, {"echo-client", "-c", "0"}, {"echo-client", "-s", "x"},
        {"echo-client", "--proto", "udp", "-s", "4"}, {"echo-server", "--proto", "tls"}, {"echo-client", "--ca", "/nonexistent"},
        {"echo-server", "--design", "fibers"}}) {
    std::vector<std::string> argv{bin("volley")};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, dir.file("bad"));
    EXPECT_NE(p.wait_for(20s).value_or(0), 0) << args[1];
    EXPECT_FALSE(p.stderr_text().empty()) << args[1];
  }
}

// The thread-pool design: one loop run by both threads, each connection on a
// strand of its own. The same results as one loop per thread.
TEST(EchoThreadPool, ManyClientsGetEveryByteBackAndTheCountsAgree) {
  TempDir dir;
  EchoServer server(dir, {"-t", "2", "--design", "thread-pool", "--metrics", "127.0.0.1:0"});
  const auto r = run_client(dir, server.port(), {"-c", "100", "-t", "2", "-m", "50", "-s", "64", "-z", "1"});
  expect_clean_run(r, 64);
  // --metrics: the counters written from both threads of the pool add up.
  const int mport = metrics_port(server.process());
  ASSERT_GT(mport, 0) << server.process().stdout_text();
  const auto scrape = HttpClient(mport).get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(metric_value(scrape->body, "volley_echoed_bytes_total"), json_u64(r.report, "total_bytes")) << scrape->body;
  EXPECT_EQ(metric_value(scrape->body, "volley_connections_opened_total"), 100) << scrape->body;
  const auto totals = server.stop();
  EXPECT_EQ(json_u64(totals, "bytes"), json_u64(r.report, "total_bytes"));
  EXPECT_EQ(json_u64(totals, "connections"), 100u);
  EXPECT_EQ(json_u64(totals, "errors"), 0u);
}

// UDP in the thread-pool design: one socket per slot on the port, each on a
// strand of the shared loop, so either thread may serve either socket.
TEST(EchoThreadPool, UdpEchoesEveryDatagramAndTheCountsAgree) {
  TempDir dir;
  EchoServer server(dir, {"--proto", "udp", "-t", "2", "--design", "thread-pool", "--metrics", "127.0.0.1:0"});
  // (--loss-timeout: see Echo.UdpEchoesEveryDatagram.)
  const auto r = run_client(dir, server.port(), {"--proto", "udp", "-c", "8", "-t", "2", "-m", "50", "-s", "100", "-z", "1",
                                                 "--loss-timeout", "5000"});
  expect_clean_run(r, 100);
  EXPECT_EQ(json_u64(r.report, "lost"), 0u);
  const int mport = metrics_port(server.process());
  ASSERT_GT(mport, 0) << server.process().stdout_text();
  const auto scrape = HttpClient(mport).get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(metric_value(scrape->body, "volley_echoed_datagrams_total"), json_u64(r.report, "total_messages"))
      << scrape->body;
  const auto totals = server.stop();
  EXPECT_EQ(json_u64(totals, "datagrams"), json_u64(r.report, "total_messages"));
  EXPECT_EQ(json_u64(totals, "bytes"), json_u64(r.report, "total_bytes"));
  EXPECT_EQ(json_u64(totals, "errors"), 0u);
}

TEST(EchoThreadPool, AClientThatReadsLateGetsEveryByteBack) {
  TempDir dir;
  EchoServer server(dir, {"-t", "2", "--design", "thread-pool"});
  RawClient client(server.port());
  std::vector<std::byte> data(24 << 20);  // past the server's 4 MiB pause and the kernel's buffers
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::byte{static_cast<unsigned char>(i % 253)};
  std::thread writer([&] { client.send(data); });
  std::this_thread::sleep_for(300ms);
  const auto got = client.read(data.size());
  writer.join();
  EXPECT_TRUE(got == data);
  client.close();
  EXPECT_EQ(json_u64(server.stop(), "bytes"), data.size());
}

TEST(EchoThreadPool, TlsEchoesEveryByte) {
  TempDir dir;
  const std::string certs = make_certs(dir);
  EchoServer server(dir, {"--proto", "tls", "-t", "2", "--design", "thread-pool", "--cert", certs + "/server.pem",
                          "--key", certs + "/server.key"});
  const auto r = run_client(dir, server.port(), {"--proto", "tls", "--ca", certs + "/ca.pem", "-c", "20", "-t", "2",
                                                 "-m", "50", "-s", "32", "-z", "0.5"});
  expect_clean_run(r, 32);
  const auto totals = server.stop();
  EXPECT_EQ(json_u64(totals, "connections"), 20u);
  EXPECT_EQ(json_u64(totals, "handshake_failures"), 0u);
}

// SIGTERM while 50 clients are mid-run: every connection is closed on its own
// strand, the stop finishes and the report is printed.
TEST(EchoThreadPool, AStopWithClientsMidRunIsGraceful) {
  TempDir dir;
  EchoServer server(dir, {"-t", "2", "--design", "thread-pool", "--metrics", "127.0.0.1:0"});
  const int mport = metrics_port(server.process());
  ASSERT_GT(mport, 0) << server.process().stdout_text();
  ChildProcess clients({bin("volley"), "echo-client", "-p", std::to_string(server.port()), "-c", "50", "-t", "2", "-z",
                        "30", "--no-progress"},
                       dir.file("clients"));
  // Stopped once traffic is under way, as the server itself counts it (how many
  // clients have connected by then does not matter). A fixed 500 ms sleep used
  // to stand in for this; under load and ASan no client had connected by then,
  // and the report said 0 connections and 0 bytes.
  ASSERT_TRUE(wait_for_metric(mport, "volley_echoed_bytes_total", [](double n) { return n > 0; }, 60s));
  const auto totals = server.stop();  // expects exit code 0 within 20 s
  EXPECT_GT(json_u64(totals, "connections"), 0u);
  EXPECT_GT(json_u64(totals, "bytes"), 0u);
  EXPECT_EQ(json_u64(totals, "aborted_at_shutdown"), 0u) << "every connection closed gracefully, none at the deadline";
  clients.send_signal(SIGKILL);
}

}  // namespace
}  // namespace volley::test
