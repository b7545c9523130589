// The chat room example (examples/chat_server.cpp, chat_client.cpp) does what
// its comments say: every message to every member once, in each sender's
// order, across both worker loops; a member that stops reading is let go
// rather than waited for or skipped. Over TCP, TLS and WebSocket (members
// speaking through Boost.Beast's client: one chat message per WebSocket message).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <gtest/gtest.h>

#include <volley/wire/checked.hpp>

#include "child_process.hpp"
#include "example_server.hpp"
#include "raw_client.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;

// A member's connection: a raw TCP socket, or a WebSocket client (Beast's).
class MemberLink {
 public:
  virtual ~MemberLink() = default;
  virtual void send(std::span<const std::byte> bytes) = 0;
  // What came next (empty: nothing for 5 s, or the end).
  virtual std::vector<std::byte> read_some() = 0;
};

class TcpLink final : public MemberLink {
 public:
  explicit TcpLink(int port) : socket_(port) {}
  void send(std::span<const std::byte> bytes) override { socket_.send(bytes); }
  std::vector<std::byte> read_some() override { return socket_.read_some(256 * 1024); }  // 5 s at most

 private:
  RawClient socket_;
};

// Over TLS, verifying the room with the test CA. Reads wait for the next
// record: the room's heartbeats (every 5 s) bound the wait as the raw
// socket's timeout does.
class TlsLink final : public MemberLink {
 public:
  TlsLink(int port, const std::string& ca) : context_(boost::asio::ssl::context::tls_client), stream_(io_, context_) {
    context_.load_verify_file(ca);
    stream_.set_verify_mode(boost::asio::ssl::verify_peer);
    stream_.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    stream_.next_layer().set_option(boost::asio::ip::tcp::no_delay(true));
    stream_.handshake(boost::asio::ssl::stream_base::client);
  }
  void send(std::span<const std::byte> bytes) override {
    boost::asio::write(stream_, boost::asio::buffer(bytes.data(), bytes.size()));
  }
  std::vector<std::byte> read_some() override {
    std::vector<std::byte> out(256 * 1024);
    boost::system::error_code ec;
    out.resize(stream_.read_some(boost::asio::buffer(out), ec));
    return out;
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ssl::context context_;
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
};

// Each frame one binary message (over TLS too: wss). Reads wait for the next
// message, bounded by the room's heartbeats as above.
template <class Stream>
class WebSocketLink final : public MemberLink {
 public:
  template <class... Args>
  explicit WebSocketLink(int port, Args&&... args) : ws_(io_, std::forward<Args>(args)...) {
    auto& socket = boost::beast::get_lowest_layer(ws_);
    socket.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    socket.set_option(boost::asio::ip::tcp::no_delay(true));  // its frames go out as written
    if constexpr (!std::is_same_v<Stream, boost::asio::ip::tcp::socket>)
      ws_.next_layer().handshake(boost::asio::ssl::stream_base::client);
    ws_.handshake("127.0.0.1:" + std::to_string(port), "/");
    ws_.binary(true);
  }
  void send(std::span<const std::byte> bytes) override { ws_.write(boost::asio::buffer(bytes.data(), bytes.size())); }
  std::vector<std::byte> read_some() override {
    boost::beast::flat_buffer buffer;
    boost::beast::error_code ec;
    ws_.read(buffer, ec);
    if (ec) return {};
    const auto* p = static_cast<const std::byte*>(buffer.data().data());
    return {p, p + buffer.size()};
  }

 private:
  boost::asio::io_context io_;
  boost::beast::websocket::stream<Stream> ws_;
};

enum class Via { tcp, tls, ws, wss };

struct Pki {
  explicit Pki(const TempDir& dir) : path(dir.file("certs")) {
    ChildProcess p({std::string(VOLLEY_SOURCE_DIR) + "/scripts/make-test-certs.sh", path}, dir.file("certs-log"));
    EXPECT_EQ(p.wait_for(std::chrono::seconds(60)).value_or(-1), 0) << p.stderr_text();
    context.load_verify_file(path + "/ca.pem");
    context.set_verify_mode(boost::asio::ssl::verify_peer);
  }
  std::string path;
  boost::asio::ssl::context context{boost::asio::ssl::context::tls_client};  // for wss links
};

std::unique_ptr<MemberLink> connect_link(int port, Via via, Pki* pki) {
  switch (via) {
    case Via::tls: return std::make_unique<TlsLink>(port, pki->path + "/ca.pem");
    case Via::ws: return std::make_unique<WebSocketLink<boost::asio::ip::tcp::socket>>(port);
    case Via::wss:
      return std::make_unique<WebSocketLink<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>>>(port, pki->context);
    default: return std::make_unique<TcpLink>(port);
  }
}

// A member of the room, speaking checked frames.
class ChatPeer {
 public:
  explicit ChatPeer(int port, Via via = Via::tcp, Pki* pki = nullptr)
      : link_(connect_link(port, via, pki)),
        decoder_(64 * 1024 + wire::checked::kHeaderSize) {}

  void say(const std::string& text) {
    std::vector<std::byte> frame(wire::checked::kHeaderSize + text.size());
    std::error_code ec;
    wire::checked::encode(wire::checked::FrameType::message, std::as_bytes(std::span(text)), frame, ec);
    link_->send(frame);
  }

  // The next message the room says; empty when none came for 10 s. The
  // room's heartbeats (every 5 s) are skipped and do not extend the wait.
  std::string hear() {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto r = decoder_.next();
      if (r.status == wire::checked::DecodeStatus::frame) {
        if (r.frame.type == wire::checked::FrameType::heartbeat) continue;
        return std::string(reinterpret_cast<const char*>(r.frame.payload.data()), r.frame.payload.size());
      }
      if (r.status == wire::checked::DecodeStatus::rejected) return "<rejected>";
      if (pending_.empty()) {
        pending_ = link_->read_some();  // returns after at most 5 s
        taken_ = 0;
        if (pending_.empty()) continue;
      }
      taken_ += decoder_.feed(std::span(pending_).subspan(taken_));
      if (taken_ == pending_.size()) pending_.clear();
    }
    return {};
  }

  // Hears until `text` comes, skipping what comes before it; false if it never does.
  bool hear_until(const std::string& text) {
    for (std::string m = hear(); !m.empty(); m = hear())
      if (m == text) return true;
    return false;
  }

 private:
  std::unique_ptr<MemberLink> link_;
  wire::checked::FrameDecoder decoder_;
  std::vector<std::byte> pending_;  // read, not yet fed to the decoder
  std::size_t taken_ = 0;
};

bool is_greeting(const std::string& m) { return m.rfind("hello ", 0) == 0; }

// Three members talk in rounds of 30 KB messages while a fourth never reads.
// Each member says its message of round k once it has heard all of round
// k - 1, so a member that reads is never more than two rounds (180 KB) behind
// any other: far below the room's 1 MiB mark, whatever the scheduler does.
// The one that does not read passes the mark (18 MB said to it) and is let go.
class ChatRoom : public ::testing::TestWithParam<Via> {};

TEST_P(ChatRoom, EveryMemberHearsEveryMessageOnceInOrderWhileOneThatDoesNotReadIsLetGo) {
  TempDir dir;
  const Via via = GetParam();
  std::optional<Pki> pki;
  std::vector<std::string> args{"0"};
  if (via == Via::tls || via == Via::wss) {
    pki.emplace(dir);
    args.insert(args.end(), {pki->path + "/server.pem", pki->path + "/server.key"});
  }
  if (via == Via::ws || via == Via::wss) args.push_back("--ws");
  ExampleServer server(dir, "chat_server", args);
  ASSERT_GT(server.port(), 0);
  constexpr int kMembers = 3, kRounds = 200;
  // A member is in the room once the room has said its greeting back to it
  // (the server makes a connection a member before reading from it).
  std::vector<std::unique_ptr<ChatPeer>> members;
  for (int i = 0; i < kMembers; ++i) {
    members.push_back(std::make_unique<ChatPeer>(server.port(), via, pki ? &*pki : nullptr));
    members.back()->say("hello " + std::to_string(i));
    ASSERT_TRUE(members.back()->hear_until("hello " + std::to_string(i))) << "member " << i << " never joined";
  }
  ChatPeer deaf(server.port(), via, pki ? &*pki : nullptr);
  deaf.say("hello deaf");
  ASSERT_TRUE(members[0]->hear_until("hello deaf")) << "the member that does not read never joined";

  const std::string filler(30000, '.');
  std::vector<std::vector<std::string>> heard(kMembers);
  std::vector<std::thread> talkers;
  for (int i = 0; i < kMembers; ++i)
    talkers.emplace_back([&, i] {
      ChatPeer& me = *members[static_cast<std::size_t>(i)];
      auto& mine = heard[static_cast<std::size_t>(i)];
      std::vector<int> per_round(kRounds + 1, 0);  // messages heard of each round
      for (int k = 0; k < kRounds; ++k) {
        me.say(std::to_string(i) + ":" + std::to_string(k) + ":" + filler);
        while (per_round[static_cast<std::size_t>(k)] < kMembers) {
          const std::string m = me.hear();
          if (m.empty()) return;  // nothing for 10 s: the checks below say what was missing
          if (is_greeting(m)) continue;
          mine.push_back(m);
          int sender = -1, round = -1;
          if (std::sscanf(m.c_str(), "%d:%d:", &sender, &round) == 2 && round >= 0 && round <= kRounds)
            ++per_round[static_cast<std::size_t>(round)];
        }
      }
    });
  for (auto& t : talkers) t.join();

  for (int i = 0; i < kMembers; ++i) {
    SCOPED_TRACE("member " + std::to_string(i));
    const auto& mine = heard[static_cast<std::size_t>(i)];
    ASSERT_EQ(mine.size(), static_cast<std::size_t>(kMembers * kRounds));
    std::vector<int> next(kMembers, 0);  // per sender, the round expected next
    for (const auto& m : mine) {
      int sender = -1, round = -1;
      ASSERT_EQ(std::sscanf(m.c_str(), "%d:%d:", &sender, &round), 2) << m.substr(0, 40);
      ASSERT_TRUE(sender >= 0 && sender < kMembers) << m.substr(0, 40);
      EXPECT_EQ(round, next[static_cast<std::size_t>(sender)]++) << "from member " << sender;
      EXPECT_EQ(m.size(), std::to_string(sender).size() + std::to_string(round).size() + 2 + filler.size());
    }
  }
  members.clear();  // they leave first: the server's stop then has no one to linger for
  const auto [code, out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("members let go for falling behind 1\n"), std::string::npos) << out;
}

std::string via_name(const ::testing::TestParamInfo<Via>& info) {
  switch (info.param) {
    case Via::tls: return "OverTls";
    case Via::ws: return "OverWebSocket";
    case Via::wss: return "OverWebSocketOnTls";
    default: return "OverTcp";
  }
}

INSTANTIATE_TEST_SUITE_P(ChatExample, ChatRoom, ::testing::Values(Via::tcp, Via::tls, Via::ws, Via::wss), via_name);

// The command-line client: lines typed go to the room as "NAME: line" (typed
// before it has connected, they wait in its outbox), and it prints what the
// room says, its own lines included.
TEST(ChatExample, TheClientSaysEachLineTypedAndPrintsWhatTheRoomSays) {
  TempDir dir;
  ExampleServer server(dir, "chat_server");
  ASSERT_GT(server.port(), 0);
  auto listener_owner = std::make_unique<ChatPeer>(server.port());
  ChatPeer& listener = *listener_owner;
  listener.say("hello listener");
  ASSERT_TRUE(listener.hear_until("hello listener"));

  // Two lines typed at once, then standard input stays open until the test
  // has seen them arrive (bounded: 20 s), and Ctrl-D.
  const std::string done = dir.file("done");
  ChildProcess client({"/bin/sh", "-c",
                       "{ printf 'first line\\nsecond line\\n'; i=0; while [ ! -e " + done +
                           " ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; } | " + bin("chat_client") + " " +
                           std::to_string(server.port()) + " ann"},
                      dir.file("chat_client"));
  EXPECT_EQ(listener.hear(), "ann: first line");
  EXPECT_EQ(listener.hear(), "ann: second line");
  // The client printed both: the room says every message to its sender too.
  std::string printed;
  for (int i = 0; i < 400 && printed.find("ann: second line\n") == std::string::npos; ++i) {
    std::this_thread::sleep_for(25ms);
    printed = client.stdout_text();
  }
  std::ofstream(done).put('\n');
  EXPECT_EQ(client.wait_for(20s), 0) << client.stderr_text();
  printed = client.stdout_text();
  EXPECT_NE(printed.find("* joined the room\n"), std::string::npos) << printed;
  const auto first = printed.find("ann: first line\n");
  EXPECT_NE(first, std::string::npos) << printed;
  EXPECT_NE(printed.find("ann: second line\n", first), std::string::npos) << printed;
  listener_owner.reset();
  const auto [code, out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("messages said 3,"), std::string::npos) << out;
}

// Over TLS (the server with a certificate, each client verifying it with the
// CA), and over WebSocket on TLS: two command-line clients hear each other.
class ChatOverTls : public ::testing::TestWithParam<bool> {};  // with WebSocket or not

TEST_P(ChatOverTls, TwoClientsHearEachOther) {
  TempDir dir;
  const std::string ws = GetParam() ? " --ws" : "";
  ChildProcess certs({std::string(VOLLEY_SOURCE_DIR) + "/scripts/make-test-certs.sh", dir.file("certs")},
                     dir.file("certs-log"));
  ASSERT_EQ(certs.wait_for(60s).value_or(-1), 0) << certs.stderr_text();
  const std::string pki = dir.file("certs");
  std::vector<std::string> server_args{"0", pki + "/server.pem", pki + "/server.key"};
  if (GetParam()) server_args.push_back("--ws");
  ExampleServer server(dir, "chat_server", server_args);
  ASSERT_GT(server.port(), 0);
  // A client whose standard input says `line` and then stays open until the test is done (20 s at most).
  const std::string done = dir.file("done");
  const auto client = [&](const std::string& name, const std::string& line) {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 "{ printf '" + line + "\\n'; i=0; while [ ! -e " + done +
                                     " ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; } | " + bin("chat_client") +
                                     " " + std::to_string(server.port()) + " " + name + " " + pki + "/ca.pem" + ws},
        dir.file(name));
  };
  const auto printed = [](ChildProcess& p, const std::string& text) {
    for (int i = 0; i < 800; ++i) {
      if (p.stdout_text().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(25ms);
    }
    return false;
  };
  // ann is in the room once it has heard its own line back; then bob speaks.
  const auto ann = client("ann", "here");
  ASSERT_TRUE(printed(*ann, "ann: here\n")) << ann->stdout_text() << ann->stderr_text();
  const auto bob = client("bob", "hello over tls");
  EXPECT_TRUE(printed(*ann, "bob: hello over tls\n")) << ann->stdout_text();
  EXPECT_TRUE(printed(*bob, "bob: hello over tls\n")) << bob->stdout_text();
  std::ofstream(done).put('\n');
  EXPECT_EQ(ann->wait_for(20s), 0) << ann->stderr_text();
  EXPECT_EQ(bob->wait_for(20s), 0) << bob->stderr_text();
  const auto [code, out] = server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("messages said 2,"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(ChatExample, ChatOverTls, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "WithWebSocket" : "Alone"; });

}  // namespace
}  // namespace volley::test
