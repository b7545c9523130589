// ARQ over real UDP sockets: volley arq-send -> volley netem (lossy) -> volley arq-recv.
#include <csignal>
#include <future>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <volley/arq/packet.hpp>
#include <volley/arq/sctp_channel.hpp>
#include <volley/arq/udp_channel.hpp>

#include "child_process.hpp"
#include "metrics_scrape.hpp"
#include "run_until.hpp"
#include "target_fixture.hpp"

using namespace volley::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::uint64_t> delivered_sequence(const std::string& csv) {
  std::vector<std::uint64_t> seqs;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) seqs.push_back(std::stoull(line.substr(0, line.find(','))));
  return seqs;
}

}  // namespace

struct RelayCase {
  std::string name;
  std::string protocol;
  std::vector<std::string> send_flags;  // besides the common ones
  bool echo = false;
  bool thread_pool = false;  // the relay and the receiver in the thread-pool design, on two threads
};

// Test names and failures show the case's name, not its bytes.
void PrintTo(const RelayCase& c, std::ostream* out) { *out << c.name; }

class ArqOverRelay : public ::testing::TestWithParam<RelayCase> {};

// Every scheme, FEC and SCTP included, one way and echoed back, through a relay
// that loses, duplicates and corrupts: every message arrives once, intact, in order.
TEST_P(ArqOverRelay, DeliversEverythingIntactAndInOrderThroughALossyRelay) {
  const RelayCase& c = GetParam();
  TempDir dir;
  std::vector<std::string> recv_args{bin("volley"), "arq-recv", "--listen", "127.0.0.1:0", "--port-file",
                                     dir.file("recv.port"), "--protocol", c.protocol, "--window", "32", "--csv",
                                     dir.file("delivered.csv"), "--json"};
  if (c.echo) recv_args.push_back("--echo");
  const std::vector<std::string> design{"--design", "thread-pool", "--threads", "2"};
  if (c.thread_pool) recv_args.insert(recv_args.end(), design.begin(), design.end());
  ChildProcess recv(recv_args, dir.file("recv"));
  const int recv_port = wait_for_port_file(dir.file("recv.port"), recv);
  ASSERT_GT(recv_port, 0) << recv.stderr_text();
  std::vector<std::string> relay_args{bin("volley"), "netem", "--listen", "127.0.0.1:0", "--forward",
                                      "127.0.0.1:" + std::to_string(recv_port), "--up",
                                      "delay 2ms loss 10% duplicate 2% corrupt 2%", "--down", "delay 2ms loss 10%",
                                      "--seed", "5", "--json", "--no-progress", "--port-file", dir.file("relay.port")};
  if (c.thread_pool) relay_args.insert(relay_args.end(), design.begin(), design.end());
  ChildProcess relay(relay_args, dir.file("relay"));
  const int relay_port = wait_for_port_file(dir.file("relay.port"), relay);
  ASSERT_GT(relay_port, 0) << relay.stderr_text();

  const int count = c.protocol == "saw" ? 300 : c.echo ? 500 : 2000;
  std::vector<std::string> send_args{bin("volley"), "arq-send", "--to", "127.0.0.1:" + std::to_string(relay_port),
                                     "--protocol", c.protocol, "--window", "32", "--count", std::to_string(count),
                                     "--interval", c.echo ? "1" : "0", "--size", "200", "--json"};
  if (c.echo) send_args.insert(send_args.end(), {"--echo", "--csv", dir.file("round_trips.csv")});
  send_args.insert(send_args.end(), c.send_flags.begin(), c.send_flags.end());
  ChildProcess send(send_args, dir.file("send"));
  ASSERT_EQ(send.wait_for(120s).value_or(-1), 0) << send.stdout_text() << send.stderr_text();
  ASSERT_EQ(recv.wait_for(30s).value_or(-1), 0) << recv.stderr_text();
  relay.send_signal(SIGTERM);
  ASSERT_EQ(relay.wait_for(20s).value_or(-1), 0);

  const auto seqs = delivered_sequence(read_file(dir.file(c.echo ? "round_trips.csv" : "delivered.csv")));
  ASSERT_EQ(seqs.size(), static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i);
  const auto r = boost::json::parse(report_text(recv.stdout_text())).as_object();
  EXPECT_EQ(u64(r.at("damaged_messages")), 0u);
  EXPECT_EQ(r.at("design").as_string(), c.thread_pool ? "thread-pool" : "loop-per-thread");
  EXPECT_EQ(u64(r.at("threads")), c.thread_pool ? 2u : 1u);
  EXPECT_EQ(u64(r.at("delay").at("count")), static_cast<std::uint64_t>(count));
  const auto n = boost::json::parse(report_text(relay.stdout_text())).as_object();
  EXPECT_EQ(n.at("design").as_string(), c.thread_pool ? "thread-pool" : "loop-per-thread");
  EXPECT_GT(u64(n.at("up").at("lost")), 0u);  // the link really lost packets
  EXPECT_GT(u64(n.at("up").at("corrupted")), 0u);
  const auto s = boost::json::parse(send.stdout_text()).as_object();
  if (c.protocol == "sctp") {
    EXPECT_GT(u64(s.at("sctp").at("retransmitted_chunks")), 0u);
  } else {
    EXPECT_GT(u64(s.at("sender").at("retransmissions")), 0u);
  }
  if (c.echo) {
    EXPECT_EQ(u64(s.at("round_trip").at("count")), static_cast<std::uint64_t>(count));
  }
  if (!c.send_flags.empty()) {  // FEC: the receiver rebuilt lost packets from the repairs
    EXPECT_GT(u64(r.at("fec_received").at("rebuilt")), 0u) << recv.stdout_text();
    EXPECT_GT(u64(s.at("fec_sent").at("repair_packets")), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Schemes, ArqOverRelay,
                         ::testing::Values(RelayCase{"sr", "sr", {}}, RelayCase{"gbn", "gbn", {}},
                                           RelayCase{"saw", "saw", {}}, RelayCase{"sr_fec", "sr", {"--fec", "4:1"}},
                                           RelayCase{"sr_fec_adaptive_echo", "sr", {"--fec", "adaptive"}, true},
                                           RelayCase{"sctp", "sctp", {}}, RelayCase{"sctp_echo", "sctp", {}, true},
                                           RelayCase{"sr_echo_thread_pool", "sr", {}, true, true},
                                           RelayCase{"sctp_echo_thread_pool", "sctp", {}, true, true}),
                         [](const auto& info) { return info.param.name; });

// A listener used to take the first packet with a valid checksum as its peer,
// so a stray ack from another port captured it and the real sender was
// ignored for good. Now only a data packet of its conversation binds it, and
// the strays are counted.
TEST(ArqChannel, AStrayPacketCannotCaptureAListener) {
  namespace asio = boost::asio;
  using asio::ip::udp;
  asio::io_context loop;
  std::vector<std::string> delivered;
  volley::arq::SenderConfig sender_config;
  volley::arq::ReceiverConfig receiver_config;
  volley::arq::ArqChannel listener(loop, udp::socket(loop, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
                                   std::nullopt, sender_config, receiver_config, [&](std::span<const std::byte> m) {
                                     delivered.emplace_back(reinterpret_cast<const char*>(m.data()), m.size());
                                   });
  listener.start();
  const udp::endpoint at = listener.local_endpoint();

  // Strays: a valid ack, a valid data packet of another conversation, garbage.
  udp::socket stray(loop, udp::endpoint(udp::v4(), 0));
  std::vector<std::byte> packet;
  volley::arq::encode_ack({.conversation = 1, .cumulative = 0, .window = 64, .sack = {}}, packet);
  stray.send_to(asio::buffer(packet), at);
  const std::string hello = "not yours";
  volley::arq::encode_data({.conversation = 2, .sequence = 0, .fin = false, .payload = std::as_bytes(std::span(hello))},
                           packet);
  stray.send_to(asio::buffer(packet), at);
  stray.send_to(asio::buffer(std::string(40, 'x')), at);
  // A conversation opened and closed at once (end of stream at sequence 0):
  // it used to bind the listener and end its conversation with nothing
  // delivered, the real sender's packets then foreign.
  volley::arq::encode_data({.conversation = 1, .sequence = 0, .fin = true, .payload = {}}, packet);
  stray.send_to(asio::buffer(packet), at);
  bool peer_finished = false;
  listener.on_peer_finished([&](const std::error_code&) { peer_finished = true; });
  // The listener has seen the strays before the real sender starts.
  for (int i = 0; i < 500 && listener.stats().foreign_datagrams < 4; ++i) run_bounded(loop, 10ms);
  EXPECT_FALSE(peer_finished);

  volley::arq::ArqChannel sender(loop, udp::socket(loop, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), at,
                                 sender_config, receiver_config, [](std::span<const std::byte>) {});
  sender.start();
  for (int i = 0; i < 50; ++i) {
    const std::string m = "message " + std::to_string(i);
    ASSERT_TRUE(sender.send(std::as_bytes(std::span(m))));
  }
  std::string outcome = "not finished";
  sender.close([&](const std::error_code& error) { outcome = error ? error.message() : "acknowledged"; });
  for (int i = 0; i < 500 && outcome == "not finished"; ++i) run_bounded(loop, 10ms);
  EXPECT_EQ(outcome, "acknowledged");
  ASSERT_EQ(delivered.size(), 50u);
  EXPECT_EQ(delivered.front(), "message 0");
  EXPECT_EQ(delivered.back(), "message 49");
  EXPECT_EQ(listener.stats().foreign_datagrams, 4u);
  for (int i = 0; i < 500 && !peer_finished; ++i) run_bounded(loop, 10ms);
  EXPECT_TRUE(peer_finished);  // the real sender's end
}

// Two channels on two strands of one io_context that two threads run: each
// channel's socket, timer and state machine stay on its strand, so every
// message arrives once and in order however the threads take the handlers
// (the ThreadSanitizer stage runs this).
TEST(ThreadPoolDesign, ArqChannelsOnStrandsOfOnePoolDeliverEverythingInOrder) {
  namespace asio = boost::asio;
  using asio::ip::udp;
  asio::io_context pool(2);
  auto work = asio::make_work_guard(pool);
  const asio::any_io_executor a = asio::make_strand(pool), b = asio::make_strand(pool);
  const auto localhost = asio::ip::make_address("127.0.0.1");
  const volley::arq::SenderConfig sender_config;
  const volley::arq::ReceiverConfig receiver_config;
  std::vector<std::string> delivered;  // on strand b
  volley::arq::ArqChannel listener(b, udp::socket(b, udp::endpoint(localhost, 0)), std::nullopt, sender_config,
                                   receiver_config, [&](std::span<const std::byte> m) {
                                     delivered.emplace_back(reinterpret_cast<const char*>(m.data()), m.size());
                                   });
  volley::arq::ArqChannel sender(a, udp::socket(a, udp::endpoint(localhost, 0)), listener.local_endpoint(),
                                 sender_config, receiver_config, [](std::span<const std::byte>) {});
  constexpr int kMessages = 2000;
  std::promise<std::string> outcome;
  asio::post(b, [&] { listener.start(); });
  asio::post(a, [&] {
    sender.start();
    for (int i = 0; i < kMessages; ++i) {
      const std::string m = "message " + std::to_string(i);
      if (!sender.send(std::as_bytes(std::span(m)))) return outcome.set_value("send refused at " + std::to_string(i));
    }
    sender.close([&](const std::error_code& error) { outcome.set_value(error ? error.message() : ""); });
  });
  std::thread one([&] { pool.run(); }), two([&] { pool.run(); });
  auto done = outcome.get_future();
  const bool finished = done.wait_for(60s) == std::future_status::ready;
  asio::post(a, [&] { sender.stop(); });
  asio::post(b, [&] { listener.stop(); });
  work.reset();
  if (!finished) pool.stop();
  one.join();
  two.join();
  ASSERT_TRUE(finished) << "the transfer did not finish";
  EXPECT_EQ(done.get(), "");
  ASSERT_EQ(delivered.size(), static_cast<std::size_t>(kMessages));
  for (int i = 0; i < kMessages; ++i) ASSERT_EQ(delivered[static_cast<std::size_t>(i)], "message " + std::to_string(i));
}

// A channel's socket must be on the channel's executor: otherwise its
// datagrams and its timer would run on different threads of a pool.
TEST(ArqChannel, ASocketOnAnotherExecutorIsRefused) {
  namespace asio = boost::asio;
  using asio::ip::udp;
  asio::io_context loop;
  const asio::any_io_executor strand = asio::make_strand(loop);
  EXPECT_THROW(volley::arq::ArqChannel(strand, udp::socket(loop, udp::endpoint(udp::v4(), 0)), std::nullopt, {}, {},
                                       [](std::span<const std::byte>) {}),
               std::invalid_argument);
  EXPECT_THROW(volley::arq::SctpChannel(strand, udp::socket(loop, udp::endpoint(udp::v4(), 0)), std::nullopt,
                                        [](std::span<const std::byte>) {}),
               std::invalid_argument);
}

// libusrsctp keeps one stack per process: a second channel is refused with a
// clear error rather than sharing the stack behind the first one's back, and
// once the first is gone a new one works.
TEST(SctpChannel, OnePerProcessAndReusableAfterwards) {
  namespace asio = boost::asio;
  using asio::ip::udp;
  asio::io_context loop;
  const auto socket = [&] { return udp::socket(loop, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0)); };
  {
    volley::arq::SctpChannel first(loop, socket(), std::nullopt, [](std::span<const std::byte>) {});
    EXPECT_THROW(volley::arq::SctpChannel(loop, socket(), std::nullopt, [](std::span<const std::byte>) {}),
                 std::logic_error);
  }
  volley::arq::SctpChannel again(loop, socket(), std::nullopt, [](std::span<const std::byte>) {});
  EXPECT_FALSE(again.error());
}

// arq-recv's TCP mode used to allocate whatever 32-bit length a peer sent.
TEST(ArqRecv, TcpModeRefusesALengthOverTheLargestMessage) {
  namespace asio = boost::asio;
  TempDir dir;
  ChildProcess recv({bin("volley"), "arq-recv", "--protocol", "tcp", "--listen", "127.0.0.1:0", "--json",
                     "--port-file", dir.file("port")},
                    dir.file("recv"));
  const int port = wait_for_port_file(dir.file("port"), recv);
  ASSERT_GT(port, 0) << recv.stderr_text();
  asio::io_context loop;
  asio::ip::tcp::socket peer(loop);
  peer.connect({asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(port)});
  const std::array<std::uint8_t, 4> four_gib_less_one{0xff, 0xff, 0xff, 0xff};
  asio::write(peer, asio::buffer(four_gib_less_one));
  const auto code = recv.wait_for(10s);
  ASSERT_TRUE(code.has_value()) << "arq-recv waited for 4 GiB";
  EXPECT_EQ(*code, 1);
  const auto report = boost::json::parse(report_text(recv.stdout_text())).as_object();
  EXPECT_NE(boost::json::value_to<std::string>(report.at("error")).find("length over the protocol maximum"), std::string::npos)
      << recv.stdout_text();
}

// A receiver may run for days: its statistics take fixed space. It used to
// keep every delivery for the final report, about 25 bytes each (8.6 MB to
// 12.6 MB resident over 164k messages); from a quarter of this run to its end
// that grew by about 2.4 MB (a vector of 24-byte records doubling). Memory is
// measured in the Release build only: the sanitizers' runtime holds freed
// memory of its own (quarantine), which says nothing about the program's.
TEST(ArqRecv, ItsStatisticsTakeFixedSpaceHoweverLongItRuns) {
  if (kSanitizerBuild) GTEST_SKIP() << "resident memory under a sanitizer's runtime is the runtime's";
  TempDir dir;
  ChildProcess recv({bin("volley"), "arq-recv", "--protocol", "tcp", "--listen", "127.0.0.1:0", "--json", "--port-file",
                     dir.file("port"), "--metrics", "127.0.0.1:0"},
                    dir.file("recv"));
  const int port = wait_for_port_file(dir.file("port"), recv);
  ASSERT_GT(port, 0) << recv.stderr_text();
  const int mport = metrics_port(recv);
  ASSERT_GT(mport, 0) << recv.stdout_text();
  constexpr std::uint64_t kCount = 100'000;
  ChildProcess send({bin("volley"), "arq-send", "--protocol", "tcp", "--to", "127.0.0.1:" + std::to_string(port),
                     "--count", std::to_string(kCount), "--interval", "0", "--size", "16", "--json"},
                    dir.file("send"));
  // Resident memory once a quarter has arrived, and once all has (the receiver
  // lingers half a second after the sender's end, so it is still there).
  const auto resident_at = [&](std::uint64_t delivered) -> std::uint64_t {
    if (!wait_for_metric(mport, "volley_arq_messages_delivered_total",
                         [&](double n) { return n >= static_cast<double>(delivered); }, 120s))
      return 0;
    return resident_kib(recv.pid());
  };
  const std::uint64_t quarter = resident_at(kCount / 4);
  const std::uint64_t all = resident_at(kCount);
  ASSERT_GT(quarter, 0u) << "a quarter never arrived: " << send.stderr_text();
  ASSERT_GT(all, 0u) << "not everything arrived: " << send.stderr_text();
  EXPECT_LT(all, quarter + 1024) << "resident KiB at 25k messages " << quarter << ", at 100k " << all;
  ASSERT_EQ(send.wait_for(60s).value_or(-1), 0) << send.stderr_text();
  ASSERT_EQ(recv.wait_for(30s).value_or(-1), 0) << recv.stderr_text();
  const auto report = boost::json::parse(report_text(recv.stdout_text())).as_object();
  EXPECT_EQ(u64(report.at("delay").at("count")), kCount);
}

// One forged datagram (conversation 1, sequence 0, end of stream) from any
// source used to make `arq-recv` exit 0 at once with nothing delivered and the
// real sender fail. Now it is a foreign datagram, the real sender's messages
// all arrive, and a run that delivers nothing is never a success.
TEST(ArqRecv, AForgedFirstPacketCannotEndItsRun) {
  namespace asio = boost::asio;
  TempDir dir;
  ChildProcess recv({bin("volley"), "arq-recv", "--listen", "127.0.0.1:0", "--json", "--port-file", dir.file("port")},
                    dir.file("recv"));
  const int port = wait_for_port_file(dir.file("port"), recv);
  ASSERT_GT(port, 0) << recv.stderr_text();
  asio::io_context loop;
  asio::ip::udp::socket forger(loop, asio::ip::udp::endpoint(asio::ip::udp::v4(), 0));
  std::vector<std::byte> packet;
  volley::arq::encode_data({.conversation = 1, .sequence = 0, .fin = true, .payload = {}}, packet);
  forger.send_to(asio::buffer(packet), {asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(port)});
  EXPECT_FALSE(recv.wait_for(300ms).has_value()) << "arq-recv ended on one forged datagram: " << recv.stdout_text();
  ChildProcess send({bin("volley"), "arq-send", "--to", "127.0.0.1:" + std::to_string(port), "--count", "50",
                     "--interval", "0", "--json"},
                    dir.file("send"));
  ASSERT_EQ(send.wait_for(60s).value_or(-1), 0) << send.stdout_text() << send.stderr_text();
  ASSERT_EQ(recv.wait_for(30s).value_or(-1), 0) << recv.stderr_text();
  const auto report = boost::json::parse(report_text(recv.stdout_text())).as_object();
  EXPECT_EQ(u64(report.at("delay").at("count")), 50u);
  EXPECT_EQ(u64(report.at("foreign_datagrams")), 1u);
}
