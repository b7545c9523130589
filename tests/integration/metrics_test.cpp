// --metrics on the server programs: /metrics in the Prometheus text format,
// scraped while the traffic runs and after it, equals the final report.
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <volley/wire/checked.hpp>

#include "child_process.hpp"
#include "http_client.hpp"
#include "metrics_scrape.hpp"
#include "raw_client.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;

std::uint64_t field(const boost::json::object& report, const char* name) {
  return boost::json::value_to<std::uint64_t>(report.at(name));
}

TEST(Metrics, PingpongServerCountsLiveSessionsAndEndsEqualToItsReport) {
  TempDir dir;
  ChildProcess server({bin("volley"), "pingpong-server", "--port", "0", "--json", "--no-progress", "--threads", "2",
                       "--heartbeat-ms", "0", "--metrics", "127.0.0.1:0", "--port-file", dir.file("port")},
                      dir.file("server"));
  const int port = wait_for_port_file(dir.file("port"), server);
  ASSERT_GT(port, 0) << server.stderr_text();
  const int mport = metrics_port(server);
  ASSERT_GT(mport, 0) << server.stdout_text();
  HttpClient scraper(mport);

  // A session that stays open: its messages are counted while it lives. (The
  // server sends no heartbeats and expects none, so this silent raw client
  // stays; the round-trip client below sends its own, which are counted.)
  RawClient raw(port);
  constexpr int kRaw = 50;
  std::vector<std::byte> frame(wire::checked::kHeaderSize + 16);
  std::error_code ec;
  const std::string text = "sixteen bytes!!!";
  wire::checked::encode(wire::checked::FrameType::message, std::as_bytes(std::span(text)), frame, ec);
  for (int i = 0; i < kRaw; ++i) raw.send(frame);
  ASSERT_EQ(raw.read(frame.size() * kRaw).size(), frame.size() * kRaw);  // every echo back
  const auto live = scraper.get("/metrics");
  ASSERT_TRUE(live);
  EXPECT_EQ(metric_value(live->body, "volley_messages_received_total"), kRaw) << live->body;
  EXPECT_EQ(metric_value(live->body, "volley_sessions_open"), 1) << live->body;

  // The round-trip client, run to the end.
  ChildProcess client({bin("volley"), "pingpong", "-p", std::to_string(port), "-g", "1", "--sizes", "100,1000", "-n",
                       "300", "--warmup", "10", "--no-progress", "--heartbeat-ms", "100"},
                      dir.file("client"));
  while (!client.wait_for(10ms)) ASSERT_TRUE(scraper.get("/healthz")) << "scrapes go on during the traffic";
  raw.close();
  // Sessions are counted as they end on the server's loops: scrape until all have.
  std::string body;
  for (int i = 0; i < 500 && metric_value(body, "volley_sessions_open") != 0; ++i) {
    const auto a = scraper.get("/metrics");
    ASSERT_TRUE(a);
    body = a->body;
  }
  ASSERT_EQ(metric_value(body, "volley_sessions_open"), 0) << body;
  scraper.close();  // a scraper that stayed would hold the stop up to its linger

  server.send_signal(SIGTERM);
  ASSERT_EQ(server.wait_for(20s).value_or(-1), 0) << server.stderr_text();
  const auto report = boost::json::parse(report_text(server.stdout_text())).as_object();
  EXPECT_GT(field(report, "messages_in"), static_cast<std::uint64_t>(kRaw));
  EXPECT_GE(field(report, "sessions"), 2u);
  EXPECT_EQ(metric_value(body, "volley_sessions_opened_total"), field(report, "sessions"));
  EXPECT_EQ(metric_value(body, "volley_messages_received_total"), field(report, "messages_in"));
  EXPECT_EQ(metric_value(body, "volley_messages_sent_total"), field(report, "messages_out"));
  EXPECT_EQ(metric_value(body, "volley_heartbeats_received_total"), field(report, "heartbeats_in"));
  EXPECT_EQ(metric_value(body, "volley_heartbeats_sent_total"), field(report, "heartbeats_out"));
  EXPECT_EQ(metric_value(body, "volley_protocol_errors_total"), field(report, "protocol_errors"));
  EXPECT_EQ(metric_value(body, "volley_high_water_events_total"), field(report, "high_water_events"));
  // Every session's end, by reason, as the report words them and as labels.
  const std::pair<const char*, const char*> reasons[] = {
      {"peer closed", "peer_closed"},         {"i/o error", "io_error"},       {"protocol error", "protocol_error"},
      {"closed locally", "local_close"},      {"shutdown", "shutdown"},        {"heartbeat timeout", "heartbeat_timeout"},
      {"idle timeout", "idle_timeout"},       {"slow consumer", "slow_consumer"}, {"handshake failed", "handshake_failed"}};
  std::uint64_t ended = 0;
  for (const auto& [word, label] : reasons) {
    const auto n = field(report.at("closes").as_object(), word);
    ended += n;
    EXPECT_NE(body.find("volley_sessions_closed_total{reason=\"" + std::string(label) + "\"} " + std::to_string(n) + "\n"),
              std::string::npos)
        << word << " " << n << "\n"
        << body;
  }
  EXPECT_EQ(ended, field(report, "sessions"));
}

// The gNB target: frames, bytes and rejections per type, replies and
// connection ends, equal to its report once the generator has finished.
TEST(Metrics, TargetCountsPerMessageTypeAsItsReportDoes) {
  TempDir dir;
  ChildProcess target({bin("volley"), "target", "--port", "0", "--json", "--no-progress", "--threads", "2", "--reply",
                       "ack", "--metrics", "127.0.0.1:0", "--port-file", dir.file("port")},
                      dir.file("target"));
  const int port = wait_for_port_file(dir.file("port"), target);
  ASSERT_GT(port, 0) << target.stderr_text();
  const int mport = metrics_port(target);
  ASSERT_GT(mport, 0) << target.stdout_text();
  // Control and data frames, and ack frames over their body limit (rejected).
  ChildProcess gen({bin("traffic_generator"), "-p", std::to_string(port), "-m", "1001:10:45", "-m", "8001:100:45", "-m",
                    "1002:40:10", "--allow-invalid", "-t", "0.3", "-c", "2", "--no-progress"},
                   dir.file("gen"));
  ASSERT_EQ(gen.wait_for(60s).value_or(-1), 0) << gen.stderr_text();
  HttpClient scraper(mport);
  std::string body;
  for (int i = 0; i < 500; ++i) {  // until both connections' ends are counted
    const auto a = scraper.get("/metrics");
    ASSERT_TRUE(a);
    body = a->body;
    if (metric_value(body, "volley_connections_opened_total") == 2 &&
        metric_value(body, "volley_connections_closed_total{reason=\"peer_closed\"}") +
                metric_value(body, "volley_connections_closed_total{reason=\"protocol_error\"}") ==
            2)
      break;
    std::this_thread::sleep_for(10ms);
  }
  scraper.close();
  target.send_signal(SIGTERM);
  ASSERT_EQ(target.wait_for(20s).value_or(-1), 0) << target.stderr_text();
  const auto report = boost::json::parse(report_text(target.stdout_text())).as_object();
  std::uint64_t frames = 0;
  for (const auto& t : report.at("types").as_array()) {
    const auto& type = t.as_object();
    const std::string name(type.at("name").as_string());
    SCOPED_TRACE(name);
    frames += field(type, "frames");
    EXPECT_EQ(metric_value(body, "volley_gnb_frames_received_total{type=\"" + name + "\"}"), field(type, "frames"));
    EXPECT_EQ(metric_value(body, "volley_gnb_received_bytes_total{type=\"" + name + "\"}"), field(type, "bytes"));
    const auto& rejected = type.at("rejected").as_object();
    EXPECT_EQ(metric_value(body, "volley_gnb_frames_rejected_total{type=\"" + name + "\",reason=\"body_too_long\"}"),
              field(rejected, "body_too_long"));
  }
  EXPECT_GT(frames, 0u);
  const auto& ack = report.at("types").as_array()[1].as_object();
  EXPECT_GT(field(ack.at("rejected").as_object(), "body_too_long"), 0u) << "the over-long acks were counted";
  EXPECT_EQ(metric_value(body, "volley_gnb_replies_sent_total{kind=\"ack\"}"),
            field(report.at("replies").as_object(), "ack"));
  EXPECT_EQ(metric_value(body, "volley_connections_opened_total"),
            field(report.at("connections").as_object(), "accepted"));
}

// The RPC server: requests, answers and error replies, and its sessions'
// ends and traffic, equal to its report once the benchmark client has gone.
// In both designs: in the thread-pool one, three clients' sessions count into
// the slots' stats from either thread, under each slot's lock.
TEST(Metrics, RpcServerCountsAsItsReportDoes) {
  for (const std::string design : {"loop-per-thread", "thread-pool"}) {
    SCOPED_TRACE(design);
    TempDir dir;
    ChildProcess server({bin("volley"), "rpc-server", "--port", "0", "--json", "--threads", "2", "--metrics", "127.0.0.1:0",
                         "--design", design, "--port-file", dir.file("port")},
                        dir.file("server"));
    const int port = wait_for_port_file(dir.file("port"), server);
    ASSERT_GT(port, 0) << server.stderr_text();
    const int mport = metrics_port(server);
    ASSERT_GT(mport, 0) << server.stdout_text();
    std::vector<std::unique_ptr<ChildProcess>> benches;
    for (int i = 0; i < 3; ++i)
      benches.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{bin("volley"), "rpc-bench", "--port", std::to_string(port), "--seconds", "0.3",
                                   "--in-flight", "4"},
          dir.file("bench" + std::to_string(i))));
    for (auto& bench : benches) ASSERT_EQ(bench->wait_for(60s).value_or(-1), 0) << bench->stderr_text();
    HttpClient scraper(mport);
    std::string body;
    for (int i = 0; i < 500; ++i) {  // until every session's end is counted
      const auto a = scraper.get("/metrics");
      ASSERT_TRUE(a);
      body = a->body;
      if (metric_value(body, "volley_sessions_opened_total") > 0 && metric_value(body, "volley_sessions_open") == 0) break;
      std::this_thread::sleep_for(10ms);
    }
    scraper.close();
    server.send_signal(SIGTERM);
    ASSERT_EQ(server.wait_for(20s).value_or(-1), 0) << server.stderr_text();
    const auto report = boost::json::parse(report_text(server.stdout_text())).as_object();
    EXPECT_GT(field(report, "requests"), 0u);
    EXPECT_EQ(metric_value(body, "volley_rpc_requests_total"), field(report, "requests")) << body;
    EXPECT_EQ(metric_value(body, "volley_rpc_calls_answered_total"), field(report, "calls"));
    EXPECT_EQ(metric_value(body, "volley_rpc_error_replies_total"), field(report, "error_replies"));
    EXPECT_EQ(metric_value(body, "volley_sessions_opened_total"), field(report, "sessions"));
    EXPECT_EQ(metric_value(body, "volley_heartbeats_received_total"), field(report, "heartbeats_in"));
    EXPECT_EQ(metric_value(body, "volley_protocol_errors_total"), field(report, "protocol_errors"));
  }
}

// The thread-pool design: each session on a strand of its own, on either
// thread; scrapes during the traffic read every open session on its strand
// and never count ahead; once all have ended the numbers equal the report.
TEST(Metrics, PingpongServerInTheThreadPoolDesignCountsEverySessionOnce) {
  TempDir dir;
  ChildProcess server({bin("volley"), "pingpong-server", "--port", "0", "--json", "--no-progress", "--threads", "2",
                       "--design", "thread-pool", "--heartbeat-ms", "0", "--metrics", "127.0.0.1:0", "--port-file",
                       dir.file("port")},
                      dir.file("server"));
  const int port = wait_for_port_file(dir.file("port"), server);
  ASSERT_GT(port, 0) << server.stderr_text();
  const int mport = metrics_port(server);
  ASSERT_GT(mport, 0) << server.stdout_text();
  constexpr int kClients = 6, kMessages = 2000;
  std::vector<std::byte> frame(wire::checked::kHeaderSize + 16);
  std::error_code ec;
  const std::string text = "sixteen bytes!!!";
  wire::checked::encode(wire::checked::FrameType::message, std::as_bytes(std::span(text)), frame, ec);
  std::atomic<int> echoed_whole{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&] {
      RawClient raw(port);
      for (int k = 0; k < kMessages; ++k) raw.send(frame);
      if (raw.read(frame.size() * kMessages).size() == frame.size() * kMessages) ++echoed_whole;
    });
  HttpClient scraper(mport);
  double most = 0;
  bool answered = true;
  for (int i = 0; i < 50 && answered; ++i) {  // scrapes while the clients talk
    const auto a = scraper.get("/metrics");
    answered = a.has_value();
    const double seen = answered ? metric_value(a->body, "volley_messages_received_total") : most;
    EXPECT_GE(seen, most) << "a later scrape counted fewer";
    most = seen;
  }
  for (auto& t : clients) t.join();  // before any ASSERT: a joinable thread's destructor ends the process
  ASSERT_TRUE(answered) << "a scrape during the traffic went unanswered\n" << server.stderr_text() << server.stdout_text();
  EXPECT_EQ(echoed_whole.load(), kClients);
  std::string body;
  for (int i = 0; i < 500 && (metric_value(body, "volley_sessions_open") != 0 ||
                              metric_value(body, "volley_sessions_opened_total") != kClients);
       ++i) {
    const auto a = scraper.get("/metrics");
    ASSERT_TRUE(a);
    body = a->body;
  }
  EXPECT_EQ(metric_value(body, "volley_messages_received_total"), kClients * kMessages) << body;
  scraper.close();
  server.send_signal(SIGTERM);
  ASSERT_EQ(server.wait_for(20s).value_or(-1), 0) << server.stderr_text();
  const auto report = boost::json::parse(report_text(server.stdout_text())).as_object();
  EXPECT_EQ(field(report, "messages_in"), static_cast<std::uint64_t>(kClients * kMessages));
  EXPECT_EQ(field(report, "sessions"), static_cast<std::uint64_t>(kClients));
  EXPECT_EQ(metric_value(body, "volley_messages_sent_total"), field(report, "messages_out"));
  EXPECT_LE(most, kClients * kMessages);
}

namespace {
// The UDP relay: per-direction counters, labelled, equal to its final report.
// `design`: flags choosing how the relay runs.
void netem_counts_per_direction_as_its_report_does(const std::vector<std::string>& design) {
  TempDir dir;
  boost::asio::io_context io;
  boost::asio::ip::udp::socket sink(io, {boost::asio::ip::make_address("127.0.0.1"), 0});  // where the relay forwards
  std::vector<std::string> argv{bin("volley"), "netem", "--listen", "127.0.0.1:0", "--forward",
                                "127.0.0.1:" + std::to_string(sink.local_endpoint().port()), "--up", "loss 30%",
                                "--seed", "7", "--json", "--no-progress", "--metrics", "127.0.0.1:0"};
  argv.insert(argv.end(), design.begin(), design.end());
  ChildProcess relay(argv, dir.file("relay"));
  const int mport = metrics_port(relay);
  ASSERT_GT(mport, 0) << relay.stdout_text() << relay.stderr_text();
  const std::string out = relay.stdout_text();
  const auto listening = out.find("listening udp ");
  ASSERT_NE(listening, std::string::npos) << out;
  const int port = std::stoi(out.substr(out.rfind(':', out.find('\n', listening)) + 1));
  boost::asio::ip::udp::socket sender(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  constexpr int kSent = 200;
  const std::string payload(100, 'x');
  for (int i = 0; i < kSent; ++i)
    sender.send_to(boost::asio::buffer(payload), {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  HttpClient scraper(mport);
  const std::string in_up = "volley_netem_packets_received_total{direction=\"up\"}";
  std::string body;
  for (int i = 0; i < 500 && metric_value(body, in_up) != kSent; ++i) {
    const auto a = scraper.get("/metrics");
    ASSERT_TRUE(a);
    body = a->body;
  }
  ASSERT_EQ(metric_value(body, in_up), kSent) << body;
  scraper.close();
  relay.send_signal(SIGTERM);
  ASSERT_EQ(relay.wait_for(20s).value_or(-1), 0) << relay.stderr_text();
  const auto report = boost::json::parse(report_text(relay.stdout_text())).as_object();
  const auto& up = report.at("up").as_object();
  EXPECT_GT(field(up, "lost"), 0u);
  EXPECT_EQ(metric_value(body, "volley_netem_packets_sent_total{direction=\"up\"}"), field(up, "packets_out"));
  EXPECT_EQ(metric_value(body, "volley_netem_sent_bytes_total{direction=\"up\"}"), field(up, "bytes_out"));
  EXPECT_EQ(metric_value(body, "volley_netem_packets_dropped_total{direction=\"up\",reason=\"lost\"}"),
            field(up, "lost"));
  EXPECT_EQ(field(up, "packets_out") + field(up, "lost"), static_cast<std::uint64_t>(kSent));
  EXPECT_EQ(metric_value(body, "volley_netem_packets_received_total{direction=\"down\"}"), 0);
}
}  // namespace

TEST(Metrics, NetemRelayCountsPerDirectionAsItsReportDoes) { netem_counts_per_direction_as_its_report_does({}); }

// The same with the relay and the scrapes sharing a pool of two threads.
TEST(Metrics, NetemRelayInTheThreadPoolDesignCountsAsItsReportDoes) {
  netem_counts_per_direction_as_its_report_does({"--design", "thread-pool", "--threads", "2"});
}

namespace {
// The ARQ receiver: delivered messages and the one-way delay as a Prometheus
// histogram, consistent within a scrape and never ahead of the final report.
// `design`: flags choosing how the receiver runs.
void arq_receiver_serves_its_delay_histogram(const std::vector<std::string>& design) {
  TempDir dir;
  std::vector<std::string> argv{bin("volley"), "arq-recv", "--listen", "127.0.0.1:0", "--json", "--metrics",
                                "127.0.0.1:0", "--port-file", dir.file("port")};
  argv.insert(argv.end(), design.begin(), design.end());
  ChildProcess receiver(argv, dir.file("receiver"));
  const int port = wait_for_port_file(dir.file("port"), receiver);
  ASSERT_GT(port, 0) << receiver.stderr_text();
  const int mport = metrics_port(receiver);
  ASSERT_GT(mport, 0) << receiver.stdout_text();
  constexpr int kCount = 1000;
  ChildProcess sender({bin("volley"), "arq-send", "--to", "127.0.0.1:" + std::to_string(port), "--count",
                       std::to_string(kCount), "--interval", "1", "--json"},
                      dir.file("sender"));
  // Scrape while the transfer runs (it lasts about a second), until one sees messages.
  std::string body;
  for (int i = 0; i < 2000 && metric_value(body, "volley_arq_messages_delivered_total") <= 0; ++i) {
    HttpClient scraper(mport);
    const auto a = scraper.get("/metrics");
    ASSERT_TRUE(a) << "the receiver stopped serving before a message arrived";
    body = a->body;
  }
  const double delivered = metric_value(body, "volley_arq_messages_delivered_total");
  ASSERT_GT(delivered, 0) << body;
  EXPECT_EQ(metric_value(body, "volley_arq_delivery_delay_seconds_count"), delivered) << body;
  EXPECT_EQ(metric_value(body, "volley_arq_delivery_delay_seconds_bucket{le=\"+Inf\"}"), delivered) << body;
  EXPECT_LE(metric_value(body, "volley_arq_delivery_delay_seconds_bucket{le=\"0.001\"}"),
            metric_value(body, "volley_arq_delivery_delay_seconds_bucket{le=\"0.01\"}"));
  EXPECT_EQ(metric_value(body, "volley_arq_damaged_messages_total"), 0);
  ASSERT_EQ(sender.wait_for(60s).value_or(-1), 0) << sender.stderr_text();
  ASSERT_EQ(receiver.wait_for(30s).value_or(-1), 0) << receiver.stderr_text();
  const auto report = boost::json::parse(report_text(receiver.stdout_text())).as_object();
  EXPECT_EQ(field(report.at("delay").as_object(), "count"), static_cast<std::uint64_t>(kCount));
  EXPECT_LE(delivered, kCount);
}
}  // namespace

TEST(Metrics, ArqReceiverServesItsDelayHistogramDuringATransfer) { arq_receiver_serves_its_delay_histogram({}); }

TEST(Metrics, ArqReceiverInTheThreadPoolDesignServesItsDelayHistogram) {
  arq_receiver_serves_its_delay_histogram({"--design", "thread-pool", "--threads", "2"});
}

TEST(Metrics, TheFlagIsInTheHelpAndAnAddressThatIsNotOneIsRefused) {
  TempDir dir;
  ChildProcess help({bin("volley"), "pingpong-server", "--help"}, dir.file("help"));
  EXPECT_EQ(help.wait_for(10s).value_or(-1), 0);
  EXPECT_NE(help.stdout_text().find("--metrics"), std::string::npos) << help.stdout_text();
  ChildProcess server({bin("volley"), "pingpong-server", "--port", "0", "--metrics", "localhost"}, dir.file("server"));
  EXPECT_NE(server.wait_for(10s).value_or(0), 0);
  EXPECT_NE(server.stderr_text().find("expected ADDRESS:PORT"), std::string::npos) << server.stderr_text();
}

}  // namespace
}  // namespace volley::test
