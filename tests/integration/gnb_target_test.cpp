// End-to-end: the real `volley target` and generator processes over loopback.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <volley/wire/byte_order.hpp>
#include <volley/gnb/protocol.hpp>

#include "child_process.hpp"
#include "raw_client.hpp"
#include "target_fixture.hpp"

using namespace volley::test;
namespace gnb = volley::gnb;

namespace {

struct GenRun {
  int exit_code = -1;
  boost::json::object report;
  std::string stderr_text;
};

// `command` is {"traffic_generator"} or {"volley", "gen"}.
GenRun run_generator(const TempDir& dir, std::vector<std::string> command, int port, std::vector<std::string> args,
                     const std::string& name = "gen") {
  std::vector<std::string> argv{bin(command[0])};
  argv.insert(argv.end(), command.begin() + 1, command.end());
  argv.insert(argv.end(), {"--port", std::to_string(port), "--json", "--no-progress"});
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess gen(argv, dir.file(name));
  GenRun run;
  run.exit_code = gen.wait_for(std::chrono::seconds(60)).value_or(-1);
  run.stderr_text = gen.stderr_text();
  if (run.exit_code == 0) run.report = boost::json::parse(gen.stdout_text()).as_object();
  return run;
}

// Frames the generator sent, per type, from its per-spec report.
std::map<std::string, std::uint64_t> sent_per_type(const boost::json::object& gen) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& s : gen.at("specs").as_array()) out[std::string(s.at("type").as_string())] += u64(s.at("frames"));
  return out;
}

std::map<std::string, std::uint64_t> received_per_type(const boost::json::object& target) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& t : target.at("types").as_array())
    if (u64(t.at("frames")) > 0) out[std::string(t.at("type").as_string())] = u64(t.at("frames"));
  return out;
}

struct Mix {
  std::string name;
  std::vector<std::string> gen_args;
  std::string reply;
  std::vector<std::string> target_args = {};
};

// Names the case in test listings instead of dumping its bytes.
void PrintTo(const Mix& mix, std::ostream* os) { *os << mix.name; }

class GeneratorIntoTarget : public ::testing::TestWithParam<Mix> {};

TEST_P(GeneratorIntoTarget, EveryTypeCountReceivedEqualsTheCountSent) {
  const Mix& mix = GetParam();
  TempDir dir;
  std::vector<std::string> target_args{"--threads", "2", "--reply", mix.reply};
  target_args.insert(target_args.end(), mix.target_args.begin(), mix.target_args.end());
  RunningTarget target(dir, target_args);
  ASSERT_NE(target.port(), 0);
  std::vector<std::string> args = mix.gen_args;
  args.insert(args.end(), {"-t", "1"});
  const GenRun gen = run_generator(dir, {"volley", "gen"}, target.port(), args);
  ASSERT_EQ(gen.exit_code, 0) << gen.stderr_text;
  const boost::json::object report = target.stop();

  const auto sent = sent_per_type(gen.report);
  EXPECT_EQ(received_per_type(report), sent);
  EXPECT_GT(u64(gen.report.at("frames")), 0u);
  EXPECT_EQ(u64(report.at("frames")), u64(gen.report.at("frames")));
  EXPECT_EQ(u64(report.at("bytes")), u64(gen.report.at("bytes")));
  EXPECT_EQ(u64(gen.report.at("clean_connections")), u64(gen.report.at("connections")));

  const auto& replies = gen.report.at("replies").as_object();
  const std::uint64_t controls = sent.count("0x1001") ? sent.at("0x1001") : 0;
  if (mix.reply == "ack") {
    EXPECT_EQ(u64(replies.at("ack")), controls);
    EXPECT_EQ(u64(report.at("replies").at("ack")), controls);
    EXPECT_EQ(u64(gen.report.at("rtt_ns").at("count")), controls);
  } else if (mix.reply == "ack-checksum") {
    EXPECT_EQ(u64(replies.at("ack_checksum")), controls);
    EXPECT_EQ(u64(replies.at("checksum_mismatches")), 0u);
  } else {
    EXPECT_EQ(u64(replies.at("ack")) + u64(replies.at("ack_checksum")), 0u);
  }
  EXPECT_EQ(u64(replies.at("unmatched")), 0u);
  // Every request answered, or none where the target does not reply.
  EXPECT_EQ(u64(replies.at("unanswered")), mix.reply == "none" ? controls : 0u);
  EXPECT_EQ(u64(report.at("connections").at("accepted")), u64(gen.report.at("connections")));
}

INSTANTIATE_TEST_SUITE_P(
    Mixes, GeneratorIntoTarget,
    ::testing::Values(
        Mix{"seed1200_one_connection", {"-m", "1001:64:25", "-m", "1002:16:25", "-m", "8001:1200:50"}, "none"},
        Mix{"seed8000_four_connections",
            {"-m", "1001:64:25", "-m", "1002:16:25", "-m", "8001:8000:50", "-c", "4"},
            "ack"},
        Mix{"all_types_random_payload",
            {"-m", "1001:4:10", "-m", "1001:64:10", "-m", "1002:16:20", "-m", "1003:12:20", "-m", "1004:16:20", "-m",
             "8001:65536:10", "-m", "8001:0:10", "--random-payload", "-c", "3"},
            "ack-checksum"},
        Mix{"paced_three_connections", {"-m", "1001:32:50", "-m", "8001:100:50", "-c", "3", "--rate", "3000"}, "ack"},
        // Paced batches are copies: each checksum is of the body as it was sent.
        Mix{"paced_checksummed",
            {"-m", "1001:32:30", "-m", "1001:64:20", "-m", "8001:100:50", "-c", "2", "--rate", "3000", "--random-payload"},
            "ack-checksum"},
        // The thread-pool design: four connections' frames counted from both threads.
        Mix{"thread_pool_four_connections",
            {"-m", "1001:64:25", "-m", "1002:16:25", "-m", "8001:1200:50", "-c", "4"},
            "ack",
            {"--design", "thread-pool"}}),
    [](const auto& info) { return info.param.name; });

TEST(TrafficGenerator, SeedSyntaxWithAttachedTimeWorks) {
  TempDir dir;
  RunningTarget target(dir, {"--threads", "1"});
  ASSERT_NE(target.port(), 0);
  const GenRun gen =
      run_generator(dir, {"traffic_generator"}, target.port(), {"-m", "1001:64:25", "-m", "8001:1500:75", "-t1"});
  ASSERT_EQ(gen.exit_code, 0) << gen.stderr_text;
  EXPECT_NEAR(gen.report.at("seconds").as_double(), 1.0, 0.5);
  EXPECT_EQ(received_per_type(target.stop()), sent_per_type(gen.report));
}

TEST(MisbehavingClients, AreReportedAndDroppedWhileOthersGoOn) {
  TempDir dir;
  RunningTarget target(dir, {"--threads", "2", "--reply", "ack"});
  ASSERT_NE(target.port(), 0);
  ChildProcess good({bin("traffic_generator"), "--port", std::to_string(target.port()), "--json", "--no-progress",
                     "-m", "1001:64:25", "-m", "8001:1200:75", "-t", "2", "-c", "2"},
                    dir.file("good"));

  std::vector<std::byte> frame(gnb::kHeaderSize + 100, std::byte{0});
  {  // An oversize control message within 64 KiB: skipped in sync, nacked, connection kept.
    RawClient c(target.port());
    gnb::write_header(frame.data(), 0x1001, 100);
    volley::wire::store_u32_be(frame.data() + gnb::kHeaderSize, 77);
    c.send(frame);
    std::array<std::byte, 10> ok{};
    gnb::write_header(ok.data(), 0x1001, 4);
    volley::wire::store_u32_be(ok.data() + gnb::kHeaderSize, 78);
    c.send(ok);
    const auto replies = c.read(gnb::kNackFrameSize + gnb::kAckFrameSize);
    ASSERT_EQ(replies.size(), gnb::kNackFrameSize + gnb::kAckFrameSize);
    const auto nack = gnb::parse_nack(std::span(replies).subspan(gnb::kHeaderSize, 6));
    ASSERT_TRUE(nack);
    EXPECT_EQ(nack->transaction_id, 77u);
    EXPECT_EQ(nack->cause, gnb::NackCause::body_too_long);
    const auto ack = gnb::parse_ack(std::span(replies).subspan(gnb::kNackFrameSize + gnb::kHeaderSize, 4));
    ASSERT_TRUE(ack);
    EXPECT_EQ(ack->transaction_id, 78u);
  }
  {  // Garbage: an unknown type, so the connection is closed.
    RawClient c(target.port());
    const std::string garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    c.send(std::as_bytes(std::span(garbage.data(), garbage.size())));
    EXPECT_TRUE(c.peer_closed());
  }
  {  // A length over 64 KiB cannot be trusted: closed.
    RawClient c(target.port());
    gnb::write_header(frame.data(), 0x8001, 0x00100000);
    c.send(std::span(frame).first(gnb::kHeaderSize + 10));
    EXPECT_TRUE(c.peer_closed());
  }
  {  // A disconnect in the middle of a frame.
    RawClient c(target.port());
    gnb::write_header(frame.data(), 0x8001, 1000);
    c.send(std::span(frame).first(gnb::kHeaderSize + 50));
  }

  const auto code = good.wait_for(std::chrono::seconds(60));
  ASSERT_EQ(code.value_or(-1), 0) << good.stderr_text();
  const auto gen = boost::json::parse(good.stdout_text()).as_object();
  const auto report = target.stop();

  auto sent = sent_per_type(gen);
  sent["0x1001"] += 1;  // the valid control message of the first raw client
  EXPECT_EQ(received_per_type(report), sent);
  EXPECT_EQ(u64(gen.at("replies").at("ack")), sent_per_type(gen).at("0x1001"));
  EXPECT_EQ(u64(report.at("types").at(0).at("rejected").at("body_too_long")), 1u);
  EXPECT_EQ(u64(report.at("protocol_errors").at("unknown_type")), 1u);
  EXPECT_EQ(u64(report.at("protocol_errors").at("length_over_maximum")), 1u);
  EXPECT_EQ(u64(report.at("replies").at("nack")), 1u);
  const auto& conns = report.at("connections").as_object();
  EXPECT_EQ(u64(conns.at("accepted")), 6u);
  EXPECT_EQ(u64(conns.at("closed_protocol_error")), 2u);
  EXPECT_EQ(u64(conns.at("closed_mid_frame")), 1u);
  EXPECT_NE(target.process().stderr_text().find("unknown message type"), std::string::npos);
}

// The resident memory of a process, from /proc (kB).
// A client that sends requests and never reads the replies used to make the
// target queue every reply (1.4 GB sent: 195 MiB resident). Now the target
// stops reading from it at --max-queued, so the client's own sends back up,
// and disconnects it after --max-queued-timeout; a well-behaved client at the
// same time gets exact counts.
TEST(MisbehavingClients, AClientThatNeverReadsItsRepliesIsBoundedAndDisconnected) {
  TempDir dir;
  RunningTarget target(dir, {"--reply", "ack", "--max-queued", "65536", "--max-queued-timeout", "1"});
  ASSERT_NE(target.port(), 0);
  ChildProcess good({bin("traffic_generator"), "--port", std::to_string(target.port()), "--json", "--no-progress",
                     "-m", "1001:64:25", "-m", "8001:1200:75", "-t", "2", "-c", "1"},
                    dir.file("good"));

  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(target.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  // Control messages, each answered with an ack of the same size, sent until
  // the target stops taking them (at most 256 MiB), never reading a reply.
  std::vector<std::byte> controls(6400 * 10);
  for (std::size_t at = 0; at < controls.size(); at += 10) {
    gnb::write_header(controls.data() + at, 0x1001, 4);
    volley::wire::store_u32_be(controls.data() + at + gnb::kHeaderSize, static_cast<std::uint32_t>(at));
  }
  std::uint64_t accepted = 0;
  int refused_in_a_row = 0;
  while (accepted < (256u << 20) && refused_in_a_row < 100) {
    const ssize_t n = ::send(fd, controls.data(), controls.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      accepted += static_cast<std::uint64_t>(n) - static_cast<std::uint64_t>(n) % 10;  // whole frames only
      if (n % 10 != 0) ::send(fd, controls.data() + n, 10 - static_cast<std::size_t>(n % 10), MSG_NOSIGNAL);
      refused_in_a_row = 0;
    } else {
      ++refused_in_a_row;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  EXPECT_LT(accepted, 64u << 20) << "the target kept reading from a client that does not read";
  // (The sanitizers' runtime holds memory of its own: shadow, quarantine.)
  EXPECT_LT(resident_kib(target.process().pid()), (kSanitizerBuild ? 512u : 100u) * 1024);
  // Disconnected once it stayed over --max-queued for 1 s: the next send fails.
  bool reset = false;
  for (int i = 0; i < 1000 && !reset; ++i) {
    reset = ::send(fd, controls.data(), 10, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(reset);
  ::close(fd);

  ASSERT_EQ(good.wait_for(std::chrono::seconds(60)).value_or(-1), 0) << good.stderr_text();
  const auto gen = boost::json::parse(good.stdout_text()).as_object();
  const auto report = target.stop();
  EXPECT_EQ(u64(report.at("connections").at("closed_slow_consumer")), 1u);
  EXPECT_EQ(u64(gen.at("replies").at("ack")), sent_per_type(gen).at("0x1001"));  // the good client: every reply
}

// A connection flood cannot take every descriptor: past --max-connections a
// new connection is accepted and closed at once, and counted; once one of the
// others closes, a new one is served.
TEST(MisbehavingClients, ConnectionsOverTheMaximumAreClosedAtOnceAndCounted) {
  TempDir dir;
  RunningTarget target(dir, {"--threads", "2", "--reply", "ack", "--max-connections", "2"});
  ASSERT_NE(target.port(), 0);
  std::array<std::byte, 10> control{};
  gnb::write_header(control.data(), 0x1001, 4);
  volley::wire::store_u32_be(control.data() + gnb::kHeaderSize, 7);
  // Whether a new connection is served: its control message is acked.
  const auto served = [&](RawClient& c) {
    try {
      c.send(control);
    } catch (const std::runtime_error&) {  // already reset by the target
      return false;
    }
    return c.read(gnb::kAckFrameSize).size() == gnb::kAckFrameSize;
  };
  auto first = std::make_unique<RawClient>(target.port());
  RawClient second(target.port());
  ASSERT_TRUE(served(*first));
  ASSERT_TRUE(served(second));
  {
    RawClient third(target.port());
    EXPECT_TRUE(third.peer_closed());
  }
  first.reset();  // the target notices the close on its own time: retry until it has
  int refused_retries = 0;
  bool later_served = false;
  for (int i = 0; i < 100 && !later_served; ++i) {
    RawClient later(target.port());
    later_served = served(later);
    if (!later_served) {
      ++refused_retries;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EXPECT_TRUE(later_served);
  second.close();
  const auto report = target.stop();
  EXPECT_EQ(u64(report.at("over_limit_connections")), 1u + static_cast<std::uint64_t>(refused_retries));
  EXPECT_EQ(u64(report.at("connections").at("accepted")), 3u);  // the two, and the later one
}

// A connection that says nothing holds a descriptor and memory for ever
// unless the server ends it: --idle-timeout closes it, counted; a connection
// that keeps talking stays.
TEST(MisbehavingClients, ASilentConnectionIsClosedAfterTheIdleTimeout) {
  TempDir dir;
  RunningTarget target(dir, {"--reply", "ack", "--idle-timeout", "1"});
  ASSERT_NE(target.port(), 0);
  std::array<std::byte, 10> control{};
  gnb::write_header(control.data(), 0x1001, 4);
  RawClient silent(target.port());
  RawClient talking(target.port());
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(2)) {  // twice the timeout, a message every 50 ms
    talking.send(control);
    ASSERT_EQ(talking.read(gnb::kAckFrameSize).size(), gnb::kAckFrameSize);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(silent.peer_closed());
  // Our end of stream, and the target's answer to it, before the target is
  // stopped: otherwise the stop may close the connection first (counted as a
  // shutdown close, not a peer's).
  talking.shutdown_write();
  EXPECT_TRUE(talking.peer_closed());
  const auto report = target.stop();
  EXPECT_EQ(u64(report.at("connections").at("closed_idle")), 1u);
  EXPECT_EQ(u64(report.at("connections").at("closed_by_peer")), 1u);
}

TEST(AllowInvalid, OversizeControlsAreNackedAndTheStreamStaysInSync) {
  TempDir dir;
  RunningTarget target(dir, {"--threads", "1", "--reply", "ack"});
  ASSERT_NE(target.port(), 0);
  const GenRun gen = run_generator(dir, {"traffic_generator"}, target.port(),
                                   {"-m", "1001:100:20", "-m", "1001:8:30", "-m", "8001:300:50", "-t", "1",
                                    "--allow-invalid"});
  ASSERT_EQ(gen.exit_code, 0) << gen.stderr_text;
  const auto report = target.stop();
  const auto& specs = gen.report.at("specs").as_array();
  const std::uint64_t oversize = u64(specs.at(0).at("frames"));
  const std::uint64_t valid = u64(specs.at(1).at("frames"));
  EXPECT_GT(oversize, 0u);
  EXPECT_EQ(u64(report.at("types").at(0).at("rejected").at("body_too_long")), oversize);
  EXPECT_EQ(u64(report.at("types").at(0).at("frames")), valid);
  EXPECT_EQ(u64(report.at("types").at(4).at("frames")), u64(specs.at(2).at("frames")));
  EXPECT_EQ(u64(gen.report.at("replies").at("nack")), oversize);
  EXPECT_EQ(u64(gen.report.at("replies").at("ack")), valid);
}

// The target and the generator run gNB sessions: with --heartbeat-ms on both,
// quiet connections stay up on keepalives (six zero bytes) and a silent peer is
// found out on either side. Bounds are generous: the checks are about who
// notices what, not about timing.
TEST(GnbHeartbeats, AQuietGeneratorAndTargetKeepEachOtherAliveOnKeepalives) {
  TempDir dir;
  RunningTarget target(dir, {"--heartbeat-ms", "200", "--heartbeat-misses", "5"});
  ASSERT_NE(target.port(), 0);
  // Four messages a second and no replies: the target has nothing to say but keepalives.
  const GenRun gen = run_generator(dir, {"volley", "gen"}, target.port(),
                                   {"-m", "1001:64:100", "-r", "4", "-t", "2", "--heartbeat-ms", "200",
                                    "--heartbeat-misses", "5"});
  ASSERT_EQ(gen.exit_code, 0) << gen.stderr_text;
  const boost::json::object report = target.stop();
  EXPECT_EQ(u64(gen.report.at("clean_connections")), 1u);
  EXPECT_EQ(received_per_type(report), sent_per_type(gen.report));
  const std::uint64_t target_sent = u64(report.at("keepalives").at("sent"));
  EXPECT_GE(target_sent, 1u) << "an idle target sends keepalives";
  EXPECT_GE(u64(gen.report.at("keepalives").at("received")), 1u);
  EXPECT_LE(u64(gen.report.at("keepalives").at("received")), target_sent);
  EXPECT_LE(u64(report.at("keepalives").at("received")), u64(gen.report.at("keepalives").at("sent")));
  EXPECT_EQ(u64(report.at("connections").at("closed_heartbeat_timeout")), 0u);
  EXPECT_EQ(u64(report.at("protocol_errors").at("unknown_type")), 0u) << "keepalives are not frames";
}

TEST(GnbHeartbeats, TheTargetClosesAConnectionThatFallsSilent) {
  TempDir dir;
  RunningTarget target(dir, {"--heartbeat-ms", "100", "--heartbeat-misses", "2"});
  ASSERT_NE(target.port(), 0);
  {
    RawClient c(target.port());  // connects, then says nothing at all
    const auto keepalive = c.read(gnb::kKeepaliveSize);
    ASSERT_EQ(keepalive.size(), gnb::kKeepaliveSize);
    for (std::byte b : keepalive) EXPECT_EQ(b, std::byte{0});
    // Aborted once silent for two intervals (the read in between is up to 5 s per call).
    bool closed = false;
    for (int i = 0; i < 100 && !closed; ++i) {
      const auto more = c.read(gnb::kKeepaliveSize);
      closed = more.size() < gnb::kKeepaliveSize;
    }
    EXPECT_TRUE(closed);
  }
  const boost::json::object report = target.stop();
  EXPECT_EQ(u64(report.at("connections").at("closed_heartbeat_timeout")), 1u);
  EXPECT_GE(u64(report.at("keepalives").at("sent")), 1u);
  EXPECT_NE(target.process().stderr_text().find("heartbeat timeout"), std::string::npos);
}

TEST(GnbHeartbeats, AGeneratorEndsAConnectionToATargetThatSaysNothing) {
  TempDir dir;
  RunningTarget target(dir, {});  // no heartbeats, no replies: silent
  ASSERT_NE(target.port(), 0);
  ChildProcess gen({bin("volley"), "gen", "--port", std::to_string(target.port()), "--json", "--no-progress", "-m",
                    "8001:100:100", "-r", "20", "-t", "30", "--heartbeat-ms", "100", "--heartbeat-misses", "3"},
                   dir.file("gen"));
  const auto code = gen.wait_for(std::chrono::seconds(20));  // long before its 30 s of sending
  ASSERT_TRUE(code.has_value()) << "the generator did not notice the silence";
  EXPECT_EQ(*code, 3) << gen.stderr_text();
  const auto report = boost::json::parse(gen.stdout_text()).as_object();
  ASSERT_EQ(report.at("connection_problems").as_array().size(), 1u);
  EXPECT_NE(std::string(report.at("connection_problems").at(0).as_string()).find("heartbeat timeout"),
            std::string::npos);
  EXPECT_EQ(u64(report.at("clean_connections")), 0u);
  const boost::json::object target_report = target.stop();
  // The connection was aborted (nothing queued can reach a silent peer); what
  // reached the target before that was counted there.
  EXPECT_GT(u64(target_report.at("frames")), 0u);
  EXPECT_LE(u64(target_report.at("frames")), u64(report.at("frames")));
}

}  // namespace
