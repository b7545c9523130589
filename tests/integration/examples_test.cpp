// The examples in examples/ run as a user would run them, and do what their
// comments say.
#include <algorithm>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <volley/wire/byte_order.hpp>
#include <volley/gnb/protocol.hpp>
#include <volley/wire/checked.hpp>

#include "child_process.hpp"
#include "listening_server.hpp"
#include "raw_client.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;

// Runs an example that ends by itself; returns its exit code and stdout.
std::pair<int, std::string> run_to_end(const TempDir& dir, std::vector<std::string> argv, const std::string& name) {
  argv[0] = bin(argv[0]);
  ChildProcess p(argv, dir.file(name));
  const auto code = p.wait_for(60s);
  EXPECT_TRUE(code.has_value()) << name << " did not finish";
  return {code.value_or(-1), p.stdout_text() + p.stderr_text()};
}

// An example server: waits for its "listening tcp ADDRESS:PORT" line.
class ExampleServer {
 public:
  ExampleServer(const TempDir& dir, const std::string& name) : process_({bin(name), "0"}, dir.file(name)) {
    for (int i = 0; i < 2000 && port_ == 0; ++i) {
      const std::string text = process_.stdout_text();
      const auto eol = text.find('\n');
      if (text.rfind("listening tcp ", 0) == 0 && eol != std::string::npos)
        port_ = std::stoi(text.substr(text.rfind(':', eol) + 1));
      else
        std::this_thread::sleep_for(5ms);
    }
    if (port_ == 0) ADD_FAILURE() << name << " did not start: " << process_.stderr_text();
  }
  int port() const { return port_; }
  // SIGINT (Ctrl-C), then its exit code and final output.
  std::pair<int, std::string> stop() {
    process_.send_signal(SIGINT);
    const auto code = process_.wait_for(20s);
    return {code.value_or(-1), process_.stdout_text()};
  }

 private:
  ChildProcess process_;
  int port_ = 0;
};

TEST(Examples, EchoServerSendsEveryByteBackAndStopsOnCtrlC) {
  TempDir dir;
  ExampleServer server(dir, "echo_server");
  ASSERT_GT(server.port(), 0);
  {
    RawClient client(server.port());
    std::vector<std::byte> message(100'000);
    for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<std::byte>(i * 7);
    client.send(message);
    EXPECT_EQ(client.read(message.size()), message);
  }
  const auto [code, out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("stopped"), std::string::npos) << out;
}

TEST(Examples, GnbServiceAcksEachControlMessageByItsTransactionId) {
  TempDir dir;
  ExampleServer server(dir, "gnb_service");
  ASSERT_GT(server.port(), 0);
  {
    RawClient client(server.port());
    std::vector<std::byte> stream;
    for (std::uint32_t id : {7u, 8u, 9u}) {
      std::array<std::byte, 64> control{};
      wire::store_u32_be(control.data(), id);
      std::array<std::byte, gnb::kHeaderSize + 64> frame{};
      const auto n = gnb::encode_frame(gnb::MessageType::control, control, frame);
      stream.insert(stream.end(), frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(n));
      std::array<std::byte, gnb::kHeaderSize + 1200> data{};
      const auto m = gnb::encode_frame(gnb::MessageType::data, std::vector<std::byte>(1200), data);
      stream.insert(stream.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(m));
    }
    client.send(stream);
    for (std::uint32_t id : {7u, 8u, 9u}) {
      const auto ack = client.read(gnb::kAckFrameSize);
      ASSERT_EQ(ack.size(), gnb::kAckFrameSize);
      const auto expected = gnb::make_ack_frame({id});
      EXPECT_TRUE(std::equal(ack.begin(), ack.end(), expected.begin())) << "ack for " << id;
    }
  }
  const auto [code, out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("control 3 (acked), data 3, other 0, errors 0"), std::string::npos) << out;
}

TEST(Examples, ReconnectingClientGetsEveryQueuedMessageEchoedInOrder) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--framing", "checked", "--no-progress"});
  ASSERT_GT(server.port(), 0);
  const auto [code, out] = run_to_end(dir, {"reconnecting_client", std::to_string(server.port()), "300"}, "client");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("echoed 300 of 300, in order"), std::string::npos) << out;
  EXPECT_EQ(json_u64(server.stop(), "messages_in"), 300u);
}

TEST(Examples, RpcServiceAnswersItsOwnStructs) {
  TempDir dir;
  const auto [code, out] = run_to_end(dir, {"rpc_service"}, "rpc");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("VOLY x100 at 10004 ticks"), std::string::npos) << out;
  EXPECT_NE(out.find("3 of 3 quotes answered"), std::string::npos) << out;
}

TEST(Examples, ArqTransferDeliversEverythingInOrder) {
  TempDir dir;
  const auto [code, out] = run_to_end(dir, {"arq_transfer"}, "arq");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("all acknowledged; delivered 1000 of 1000 in order"), std::string::npos) << out;
}

}  // namespace
}  // namespace volley::test

namespace volley::test {
namespace {

using namespace std::chrono_literals;

// Checked frames over a raw socket, for the chat room.
class ChatPeer {
 public:
  explicit ChatPeer(int port) : socket_(port), decoder_(64 * 1024 + wire::checked::kHeaderSize) {}
  void say(const std::string& text) {
    std::vector<std::byte> frame(wire::checked::kHeaderSize + text.size());
    std::error_code ec;
    wire::checked::encode(wire::checked::FrameType::message, std::as_bytes(std::span(text)), frame, ec);
    socket_.send(frame);
  }
  // The next message (empty when none came within the socket's 5 s timeout).
  std::string hear() {
    for (;;) {
      const auto r = decoder_.next();
      if (r.status == wire::checked::DecodeStatus::frame) {
        if (r.frame.type == wire::checked::FrameType::heartbeat) continue;
        return std::string(reinterpret_cast<const char*>(r.frame.payload.data()), r.frame.payload.size());
      }
      if (r.status == wire::checked::DecodeStatus::rejected) return "<rejected>";
      if (pending_.empty()) {
        pending_ = socket_.read_some(256 * 1024);
        taken_ = 0;
        if (pending_.empty()) return {};
      }
      taken_ += decoder_.feed(std::span(pending_).subspan(taken_));
      if (taken_ == pending_.size()) pending_.clear();
    }
  }

 private:
  RawClient socket_;
  wire::checked::FrameDecoder decoder_;
  std::vector<std::byte> pending_;  // read, not yet fed to the decoder
  std::size_t taken_ = 0;
};

}  // namespace

// Every message reaches every member once, in each sender's order, across
// both worker loops, while a member that never reads is left behind.
TEST(Examples, ChatServerDeliversEveryMessageToEveryMemberWhileOneDoesNotRead) {
  TempDir dir;
  ExampleServer server(dir, "chat_server");
  ASSERT_GT(server.port(), 0);
  constexpr int kMembers = 3, kMessages = 200;
  std::vector<std::unique_ptr<ChatPeer>> members;
  for (int i = 0; i < kMembers; ++i) members.push_back(std::make_unique<ChatPeer>(server.port()));
  RawClient deaf(server.port());  // joins, never reads
  // A barrier made of messages: once every member has heard a "sync" all are in the room.
  std::vector<bool> synced(kMembers, false);
  for (int round = 0; round < 50 && std::count(synced.begin(), synced.end(), true) < kMembers; ++round) {
    members[0]->say("sync");
    for (int i = 0; i < kMembers; ++i)
      while (!synced[static_cast<std::size_t>(i)]) {
        const std::string m = members[static_cast<std::size_t>(i)]->hear();
        if (m.empty()) break;  // this round's sync went out before it joined: the next one will reach it
        if (m == "sync") synced[static_cast<std::size_t>(i)] = true;
      }
  }
  ASSERT_EQ(std::count(synced.begin(), synced.end(), true), kMembers);

  // 18 MB to each member: more than the kernel's buffers take for the deaf one
  // (a few MiB each way on loopback) and then its 256 KiB mark in the server.
  // Each member has one message of its own in flight, as people do: it says
  // the next once it has heard the last come back, so a member that reads
  // keeps up, and only the deaf one falls behind.
  const std::string filler(30000, '.');
  std::vector<std::vector<std::string>> heard(kMembers);
  std::vector<std::thread> talkers;
  for (int i = 0; i < kMembers; ++i)
    talkers.emplace_back([&, i] {
      ChatPeer& me = *members[static_cast<std::size_t>(i)];
      auto& mine = heard[static_cast<std::size_t>(i)];
      const std::string prefix = std::to_string(i) + ":";
      for (int k = 0; k <= kMessages; ++k) {
        if (k < kMessages) me.say(prefix + std::to_string(k) + ":" + filler);
        // Hear until our own message k came back (after the last: until everything did).
        for (;;) {
          if (k == kMessages && mine.size() >= static_cast<std::size_t>(kMembers * kMessages)) return;
          const std::string m = me.hear();
          if (m.empty()) return;  // nothing for 5 s: the checks below say what was missing
          if (m == "sync") continue;
          mine.push_back(m);
          if (k < kMessages && m.rfind(prefix + std::to_string(k) + ":", 0) == 0) break;
        }
      }
    });
  for (auto& t : talkers) t.join();

  for (int i = 0; i < kMembers; ++i) {
    SCOPED_TRACE("member " + std::to_string(i));
    const auto& mine = heard[static_cast<std::size_t>(i)];
    ASSERT_EQ(mine.size(), static_cast<std::size_t>(kMembers * kMessages));
    std::vector<int> next(kMembers, 0);  // per sender, the number expected next
    for (const auto& m : mine) {
      int sender = -1, number = -1;
      ASSERT_EQ(std::sscanf(m.c_str(), "%d:%d:", &sender, &number), 2) << m.substr(0, 40);
      ASSERT_TRUE(sender >= 0 && sender < kMembers) << m.substr(0, 40);
      EXPECT_EQ(number, next[static_cast<std::size_t>(sender)]++) << "from member " << sender;
    }
  }
  deaf.close();  // with what it never read still queued: the server's close is quick, not a flush
  const auto [code, out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("deliveries dropped for clients that did not keep up"), std::string::npos) << out;
  EXPECT_EQ(out.find("deliveries dropped for clients that did not keep up 0\n"), std::string::npos)
      << "the deaf member should have missed messages: " << out;
}

}  // namespace volley::test
