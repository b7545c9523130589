// ARQ over real UDP sockets: volley arq-send -> volley netem (lossy) -> volley arq-recv.
#include <csignal>
#include <sstream>

#include <gtest/gtest.h>

#include "child_process.hpp"
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

class ArqOverRelay : public ::testing::TestWithParam<std::string> {};

TEST_P(ArqOverRelay, DeliversEverythingIntactAndInOrderThroughALossyRelay) {
  const std::string protocol = GetParam();
  TempDir dir;
  const int recv_port = 20000 + static_cast<int>(::getpid() % 20000);
  ChildProcess recv({bin("volley"), "arq-recv", "--listen", "127.0.0.1:" + std::to_string(recv_port), "--protocol",
                     protocol, "--window", "32", "--csv", dir.file("delivered.csv"), "--json", "--ready-file",
                     dir.file("recv.ready")},
                    dir.file("recv"));
  ChildProcess relay({bin("volley"), "netem", "--listen", "127.0.0.1:0", "--forward",
                      "127.0.0.1:" + std::to_string(recv_port), "--up", "delay 2ms loss 10% duplicate 2% corrupt 2%",
                      "--down", "delay 2ms loss 10%", "--seed", "5", "--json", "--no-progress", "--ready-file",
                      dir.file("relay.ready")},
                     dir.file("relay"));
  std::string relay_port;
  for (int i = 0; i < 1000 && (relay_port.empty() || read_file(dir.file("recv.ready")).empty()); ++i) {
    relay_port = read_file(dir.file("relay.ready"));
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(relay_port.empty());
  relay_port.erase(relay_port.find_last_not_of('\n') + 1);

  const int count = protocol == "saw" ? 300 : 2000;
  ChildProcess send({bin("volley"), "arq-send", "--to", "127.0.0.1:" + relay_port, "--protocol", protocol, "--window",
                     "32", "--count", std::to_string(count), "--interval", "0", "--size", "200", "--json"},
                    dir.file("send"));
  ASSERT_EQ(send.wait_for(120s).value_or(-1), 0) << send.stdout_text() << send.stderr_text();
  ASSERT_EQ(recv.wait_for(30s).value_or(-1), 0) << recv.stderr_text();
  relay.send_signal(SIGTERM);
  ASSERT_EQ(relay.wait_for(20s).value_or(-1), 0);

  const auto seqs = delivered_sequence(read_file(dir.file("delivered.csv")));
  ASSERT_EQ(seqs.size(), static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i);
  const auto r = boost::json::parse(report_text(recv.stdout_text())).as_object();
  EXPECT_EQ(u64(r.at("damaged_messages")), 0u);
  const auto n = boost::json::parse(report_text(relay.stdout_text())).as_object();
  EXPECT_GT(u64(n.at("up").at("lost")), 0u);  // the link really lost packets
  EXPECT_GT(u64(n.at("up").at("corrupted")), 0u);
  const auto s = boost::json::parse(send.stdout_text()).as_object();
  EXPECT_GT(u64(s.at("sender").at("retransmissions")), 0u);
}

INSTANTIATE_TEST_SUITE_P(Schemes, ArqOverRelay, ::testing::Values("sr", "gbn", "saw"));
