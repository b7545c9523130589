// Shared memory's untrusted peer: a client that offers a region the server
// cannot trust fails its handshake, one that corrupts its ring afterwards
// loses its connection with a counted error, and a good client beside them
// is served throughout. The hostile client here speaks the set-up by hand
// (docs/PROTOCOL.md, "Shared-memory rings").
#include <sys/stat.h>

#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/shm.hpp>
#include <volley/net/tcp_connect.hpp>

#include "child_process.hpp"
#include "example_server.hpp"
#include "framings.hpp"
#include "hand_made_shm_client.hpp"
#include "links.hpp"
#include "listening_server.hpp"
#include "run_until.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace shm = wire::shm;
using HandMadeClient = HandMadeShmClient;
using Flaw = HandMadeShmClient::Flaw;

// A good shared-memory client: ten checked messages there and back.
bool good_client_is_served(const std::string& address) {
  asio::io_context loop;
  net::ReconnectingClientOptions o;
  o.host = address;
  o.make_codec = [] { return make_codec(Framing::checked); };
  o.make_transport = client_transport(Link::shm);
  int heard = 0;
  net::ReconnectingClient client(loop, o, {.on_message = [&](const net::Message&) { ++heard; }});
  client.start();
  if (!run_until(loop, [&] { return client.connected(); }, 5s)) return false;
  for (int i = 0; i < 10; ++i) client.send(message(Framing::checked, "good " + std::to_string(i)));
  const bool served = run_until(loop, [&] { return heard == 10; }, 5s);
  client.stop();
  run_until(loop, [&] { return !client.connected(); }, 5s);
  return served;
}

struct ShmServer {
  TempDir dir;
  std::string flag = fresh_unix_flag();
  std::string address = unix_address_of(flag);
  RunningPingPongServer server{dir, {"--unix", flag, "--shm", "--framing", "checked"}};
};

TEST(Shm, AnOfferTheServerCannotTrustFailsItsHandshakeAndIsCounted) {
  ShmServer s;
  for (const Flaw flaw : {Flaw::unsealed, Flaw::bad_magic, Flaw::short_file, Flaw::no_descriptors}) {
    HandMadeClient hostile(s.address, flaw);
    EXPECT_EQ(hostile.answer(), "closed") << "flaw " << static_cast<int>(flaw);
  }
  EXPECT_TRUE(good_client_is_served(s.address));
  const auto report = s.server.stop();
  EXPECT_EQ(json_u64(report, "handshake_failures"), 4u) << boost::json::serialize(report);
}

TEST(Shm, ACorruptRingEndsThatConnectionWithACountedErrorAndOthersGoOn) {
  ShmServer s;
  HandMadeClient hostile(s.address, Flaw::none);
  ASSERT_EQ(hostile.answer(), "A");
  EXPECT_TRUE(good_client_is_served(s.address));
  hostile.corrupt_write_index();
  EXPECT_EQ(hostile.answer(), "closed") << "the server kept a connection whose ring is corrupt";
  EXPECT_TRUE(good_client_is_served(s.address));
  const auto report = s.server.stop();
  EXPECT_EQ(json_u64(report.at("closes").as_object(), "i/o error"), 1u) << boost::json::serialize(report);
  EXPECT_EQ(json_u64(report, "handshake_failures"), 0u);
}

// No spinning before sleep, and rings smaller than a few messages: every
// message is a data doorbell and a wake-up, and most writes wait for a room
// doorbell. Everything arrives, in order, both ways.
TEST(Shm, DoorbellsAloneCarryAStreamThroughRingsSmallerThanItsMessages) {
  TempDir dir;
  const std::string flag = fresh_unix_flag();
  RunningPingPongServer server(dir, {"--unix", flag, "--shm", "--shm-spin", "0", "--framing", "checked"});
  asio::io_context loop;
  net::ReconnectingClientOptions o;
  o.host = unix_address_of(flag);
  o.make_codec = [] { return make_codec(Framing::checked); };
  o.make_transport = [] {
    return net::make_shm_transport(net::ShmRole::client, {.ring_bytes = shm::kMinCapacity, .spin_before_sleep = {}});
  };
  o.connection_limits.high_water = 16u << 20;
  const auto text = [](int i) {
    std::string t = std::to_string(i) + ":";
    t.resize(i % 3 == 0 ? 10000 : 50 + static_cast<std::size_t>(i % 700), static_cast<char>('a' + i % 26));
    return t;
  };
  std::vector<std::string> heard;
  net::ReconnectingClient client(loop, o, {.on_message = [&](const net::Message& m) {
                                   heard.push_back(text_of(Framing::checked, m.bytes));
                                 }});
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return client.connected(); }, 5s));
  constexpr int kMessages = 600;
  for (int burst = 0; burst < kMessages; burst += 50) {
    for (int i = burst; i < burst + 50; ++i) ASSERT_EQ(client.send(message(Framing::checked, text(i))), net::SendResult::sent);
    ASSERT_TRUE(run_until(loop, [&] { return heard.size() == static_cast<std::size_t>(burst + 50); }, 10s)) << heard.size();
  }
  int wrong = 0;
  for (int i = 0; i < kMessages; ++i) wrong += heard[static_cast<std::size_t>(i)] != text(i);
  EXPECT_EQ(wrong, 0);
  client.stop();
  run_until(loop, [&] { return !client.connected(); }, 5s);
  EXPECT_EQ(json_u64(server.stop(), "messages_in"), static_cast<std::uint64_t>(kMessages));
}

// examples/echo_server: TCP on a free port, shared memory on a socket in a
// temporary folder.
struct EchoExample {
  TempDir dir;
  std::string path = dir.file("echo.sock");
  ExampleServer server{dir, "echo_server", {"0", path}};

  // Waits for its shared-memory listening line.
  bool serves_local_clients() {
    for (int i = 0; i < 1000 && !announced(); ++i) std::this_thread::sleep_for(10ms);
    return announced();
  }
  // A started client connection, over shared memory (with `shm`) or TCP.
  std::shared_ptr<net::TcpConnection> connect(asio::io_context& loop, bool shared_memory,
                                              std::unique_ptr<net::StreamHandler> handler, net::ShmOptions shm = {}) {
    std::error_code ec;
    auto socket = shared_memory ? net::connect_tcp(loop, "unix:" + path, 0, 2s, ec)
                                : net::connect_tcp(loop, "127.0.0.1", static_cast<std::uint16_t>(server.port()), 2s, ec);
    if (ec) {
      ADD_FAILURE() << ec.message();
      return nullptr;
    }
    auto connection = std::make_shared<net::TcpConnection>(
        std::move(socket), std::move(handler), net::ConnectionLimits{},
        shared_memory ? net::make_shm_transport(net::ShmRole::client, shm) : nullptr);
    connection->start();
    return connection;
  }

 private:
  bool announced() { return server.output().find("listening shm unix:" + path) != std::string::npos; }
};

// examples/echo_server with a socket path: TCP clients and shared-memory
// clients on this host get their bytes back from the same handler.
class Collect final : public net::StreamHandler {
 public:
  explicit Collect(std::vector<std::byte> out) : out_(std::move(out)) {}
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_open(net::TcpConnection& c) override { c.send(out_); }
  void on_data(net::TcpConnection&, std::size_t n) override {
    received.insert(received.end(), buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  void on_close(net::TcpConnection&, const net::CloseReason&) override { closed = true; }
  std::vector<std::byte> received;
  bool closed = false;

 private:
  std::vector<std::byte> out_;
  std::array<std::byte, 4096> buffer_{};
};

TEST(Examples, EchoServerServesLocalClientsThroughSharedMemoryWithTheSameHandler) {
  EchoExample echo;
  ASSERT_GT(echo.server.port(), 0);
  ASSERT_TRUE(echo.serves_local_clients()) << echo.server.output();

  std::vector<std::byte> message(300'000);
  for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<std::byte>(i * 13);
  for (const bool shared_memory : {true, false}) {
    asio::io_context loop;
    auto handler = std::make_unique<Collect>(message);
    Collect& collect = *handler;
    const auto connection = echo.connect(loop, shared_memory, std::move(handler));
    ASSERT_TRUE(connection);
    ASSERT_TRUE(run_until(loop, [&] { return collect.received.size() >= message.size(); }, 10s))
        << (shared_memory ? "shm: " : "tcp: ") << collect.received.size();
    EXPECT_EQ(collect.received, message) << (shared_memory ? "shm" : "tcp");
    EXPECT_EQ(connection->transport() != nullptr, shared_memory);
    connection->close({});
    ASSERT_TRUE(run_until(loop, [&] { return collect.closed; }, 5s));
  }
  const auto [code, out] = echo.server.stop();
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("stopped"), std::string::npos) << out;
  struct stat st{};
  EXPECT_NE(::lstat(echo.path.c_str(), &st), 0) << "the example left its socket file behind";
}

// Messages built in place (what sessions send) go straight into the ring
// while nothing is queued before them, so the connection queues none of
// them; one that does not fit is queued, and those after it queue behind it.
// The echo comes back whole and in order either way, and over TCP all of
// them are queued.
class BuildInPlace final : public net::StreamHandler {
 public:
  // `close_after`: close() in the same cork, so that the end follows all of it.
  explicit BuildInPlace(bool close_after) : close_after_(close_after) {}
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_open(net::TcpConnection& c) override {
    const net::TcpConnection::Corked corked(c);  // nothing written before the cork's end
    first_small = send_small(c, 0);
    queued_after_small = c.queued_bytes();
    c.send_in_place(kBig, [&](std::span<std::byte> room) {
      for (std::size_t i = 0; i < kBig; ++i) room[i] = static_cast<std::byte>('A' + i % 26);
      expected.append(kBig, '?');
      for (std::size_t i = 0; i < kBig; ++i) expected[expected.size() - kBig + i] = static_cast<char>('A' + i % 26);
      return kBig;
    });
    queued_after_big = c.queued_bytes();
    second_small = send_small(c, 8);
    queued_at_end = c.queued_bytes();
    if (close_after_) c.close({});
  }
  void on_data(net::TcpConnection&, std::size_t n) override {
    received.append(reinterpret_cast<const char*>(buffer_.data()), n);
  }
  void on_close(net::TcpConnection&, const net::CloseReason&) override { closed = true; }

  static constexpr std::size_t kBig = 3 * shm::kMinCapacity;  // more than the whole ring
  std::string expected, received;
  std::size_t first_small = 0, second_small = 0;  // bytes in each run of eight
  std::size_t queued_after_small = 0, queued_after_big = 0, queued_at_end = 0;
  bool closed = false;

 private:
  std::size_t send_small(net::TcpConnection& c, int first) {
    const std::size_t before = expected.size();
    for (int i = first; i < first + 8; ++i) {
      const std::string text = "small message " + std::to_string(i) + ";";
      c.send_in_place(64, [&](std::span<std::byte> room) {
        std::memcpy(room.data(), text.data(), text.size());
        return text.size();
      });
      expected += text;
    }
    return expected.size() - before;
  }
  bool close_after_;
  std::array<std::byte, 4096> buffer_{};
};

TEST(Shm, MessagesBuiltInPlaceGoStraightIntoTheRingUnlessSomethingIsQueuedBeforeThem) {
  EchoExample echo;
  ASSERT_TRUE(echo.serves_local_clients()) << echo.server.output();
  for (const auto& run : {std::pair{true, false}, std::pair{true, true}, std::pair{false, false}, std::pair{false, true}}) {
    const bool shared_memory = run.first;
    const bool close_after = run.second;
    const std::string what = std::string(shared_memory ? "shm" : "tcp") + (close_after ? ", closed at once" : "");
    asio::io_context loop;
    auto handler = std::make_unique<BuildInPlace>(close_after);
    BuildInPlace& h = *handler;
    const auto connection = echo.connect(loop, shared_memory, std::move(handler), {.ring_bytes = shm::kMinCapacity});
    ASSERT_TRUE(connection);
    // Closed in the cork, the end goes after every byte: the echo comes back whole, then the peer's end.
    const auto echoed = [&] { return h.received.size() >= h.expected.size() && !h.expected.empty(); };
    ASSERT_TRUE(run_until(loop, [&] { return close_after ? h.closed : echoed(); }, 10s)) << what << ": " << h.received.size();
    EXPECT_EQ(h.received.size(), h.expected.size()) << what;
    EXPECT_TRUE(h.received == h.expected) << what << ": the echo differs";
    if (shared_memory) {
      EXPECT_EQ(h.queued_after_small, 0u) << "built in the ring, not queued";
      EXPECT_EQ(h.queued_after_big, BuildInPlace::kBig) << "too big for the ring: queued";
      EXPECT_EQ(h.queued_at_end, BuildInPlace::kBig + h.second_small) << "behind a queued message: queued too";
    } else {
      EXPECT_EQ(h.queued_after_small, h.first_small);
      EXPECT_EQ(h.queued_at_end, h.first_small + BuildInPlace::kBig + h.second_small);
    }
    connection->close({});
    ASSERT_TRUE(run_until(loop, [&] { return h.closed; }, 5s));
  }
  EXPECT_EQ(echo.server.stop().first, 0);
}

}  // namespace
}  // namespace volley::test
