// The four ways a connection learns of input (connection_input.hpp), each
// through the one interface and the one read loop of TcpConnection: the same
// tests, run once per way, on a server whose loop offers that way and no other.
// A way that misses an edge, loses the end, drops bytes or strands a paused
// connection fails here under its own name.
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include <volley/net/io_backend.hpp>
#include <volley/net/server.hpp>
#include <volley/net/tcp_connection.hpp>

#include "byte_echo.hpp"
#include "hand_tls_client.hpp"
#include "links.hpp"
#include "raw_client.hpp"
#include "server_thread.hpp"
#include "volley/net/connection_input.hpp"
#include "volley/net/edge_read_wait.hpp"  // VOLLEY_HAS_EDGE_READ_WAIT
#include "volley/net/spin_readers.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using Input = net::detail::ConnectionInput;

// What the server's connections saw: the input each one used, and how each ended.
struct Record {
  std::mutex mutex;
  std::vector<Input::Kind> kinds;
  std::vector<net::CloseReason::Kind> endings;
  std::atomic<std::size_t> bytes_read{0};
  std::shared_ptr<net::TcpConnection> held;  // Style::holding: the connection whose reading is paused

  // Waits up to 10 s for the server to have read `n` bytes in all.
  bool wait_read(std::size_t n) {
    for (int i = 0; i < 1000 && bytes_read.load() < n; ++i) std::this_thread::sleep_for(10ms);
    return bytes_read.load() >= n;
  }

  std::size_t ended() {
    const std::lock_guard lock(mutex);
    return endings.size();
  }
  // Waits up to 10 s for `n` connections to have ended.
  bool wait_ended(std::size_t n) {
    for (int i = 0; i < 1000 && ended() < n; ++i) std::this_thread::sleep_for(10ms);
    return ended() >= n;
  }
};

// Echoes what it reads. `slow`: holds each read a while, so the peer's next
// bytes arrive between the read that emptied the socket and the wait queued
// after it. `pausing`: after each read, stops reading until the loop's next
// turn (as a handler that waits for something else would). `silent`: reads
// and answers nothing (a write would meet a reset and end the connection
// whether or not the read path saw it). `holding`: silent, and after its
// first read pauses reading until the test resumes it (Record::held).
class InputEcho final : public net::StreamHandler {
 public:
  static constexpr std::size_t kBuffer = 4096;
  enum class Style { plain, slow, pausing, silent, holding };
  InputEcho(Record& record, Style style) : record_(record), style_(style) {}

  std::span<std::byte> read_buffer() override {
    return style_ == Style::pausing ? std::span(buffer_).first(100) : std::span(buffer_);
  }
  void on_open(net::TcpConnection& c) override {
    const std::lock_guard lock(record_.mutex);
    record_.kinds.push_back(Input::kind_of(c));
  }
  void on_data(net::TcpConnection& c, std::size_t n) override {
    if (style_ == Style::holding && !held_) {
      held_ = true;
      c.pause_reading();
      const std::lock_guard lock(record_.mutex);
      record_.held = c.shared_from_this();
    }
    record_.bytes_read += n;
    if (style_ == Style::silent || style_ == Style::holding) return;
    if (style_ == Style::slow) std::this_thread::sleep_for(200us);
    c.send(std::span(buffer_).first(n));
    if (style_ == Style::pausing) {
      c.pause_reading();
      asio::post(c.get_executor(), [connection = c.shared_from_this()] { connection->resume_reading(); });
    }
  }
  void on_close(net::TcpConnection&, const net::CloseReason& reason) override {
    const std::lock_guard lock(record_.mutex);
    record_.endings.push_back(reason.kind);
  }

 private:
  Record& record_;
  Style style_;
  bool held_ = false;
  std::array<std::byte, kBuffer> buffer_{};
};

// One worker loop that offers `kind` as the way to wait for input.
net::ServerOptions offering(Input::Kind kind) {
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1};
  options.handle_signals = false;
  switch (kind) {
    case Input::Kind::reactor: options.design = net::Design::thread_pool; break;  // strands: neither edge nor spin
    case Input::Kind::edge: break;
    case Input::Kind::spin: options.busy_poll = true; break;
    case Input::Kind::io_uring: options.receive = net::ReceivePath::io_uring; break;
  }
  return options;
}

class ConnectionInputs : public ::testing::TestWithParam<Input::Kind> {
 protected:
  void SetUp() override {
#if !defined(VOLLEY_HAS_EDGE_READ_WAIT)
    if (GetParam() == Input::Kind::edge) GTEST_SKIP() << "Asio's backend here is not epoll: no edge wait";
#endif
    if (GetParam() == Input::Kind::io_uring) {
      if (const std::string problem = net::io_uring_receive_problem(); !problem.empty()) GTEST_SKIP() << problem;
    }
  }
  // A connection a failed test left held goes while its server still exists.
  void TearDown() override { record_.held.reset(); }

  // Every connection the server made used the input under test.
  void expect_every_connection_used_it(std::size_t connections) {
    const std::lock_guard lock(record_.mutex);
    EXPECT_EQ(record_.kinds.size(), connections);
    for (const Input::Kind kind : record_.kinds) EXPECT_EQ(kind, GetParam()) << net::detail::to_string(kind);
  }

  net::Server& serve(InputEcho::Style style, net::ServerOptions options) {
    server_ = std::make_unique<net::Server>(options);
    server_->listen([this, style](std::size_t) { return std::make_unique<InputEcho>(record_, style); });
    return *server_;
  }
  net::Server& serve(InputEcho::Style style) { return serve(style, offering(GetParam())); }

  Record record_;
  std::unique_ptr<net::Server> server_;
};

std::string name(const ::testing::TestParamInfo<Input::Kind>& info) { return net::detail::to_string(info.param); }

// Keeps `loop` busy for `how_long` from the moment this returns: whatever
// arrives meanwhile is found by the loop's next look at its sockets.
void hold(asio::io_context& loop, std::chrono::milliseconds how_long) {
  auto holding = std::make_shared<std::promise<void>>();
  std::future<void> held = holding->get_future();
  asio::post(loop, [holding, how_long] {
    holding->set_value();
    std::this_thread::sleep_for(how_long);
  });
  held.wait();
}

// More clients than a busy-polling loop spins for, so some of them wait the
// other way; pieces of every size up to three read buffers.
TEST_P(ConnectionInputs, EveryByteComesBackInOrderOnEveryConnection) {
  net::Server& server = serve(InputEcho::Style::plain);
  constexpr std::size_t kClients = net::detail::SpinReaders::kMaxConnections + 4;
  constexpr std::size_t kBytes = 200'000;
  std::vector<std::size_t> echoed;
  {
    ServerThread running(server);
    echoed = echo_from_clients(server.port(), kClients, kBytes,
                               [](std::size_t i) { return 100 + (i * 997) % (3 * InputEcho::kBuffer); });
  }
  for (std::size_t i = 0; i < kClients; ++i) EXPECT_EQ(echoed[i], kBytes) << "client " << i;
  expect_every_connection_used_it(kClients);
}

// Two pieces sent with a gap shorter than the handler's time with the first:
// the second lands after the read that emptied the socket and before (or just
// as) the wait is queued. A wait that misses it leaves the client's read short.
TEST_P(ConnectionInputs, InputThatArrivesWhileAReadIsHandledIsNeverMissed) {
  net::Server& server = serve(InputEcho::Style::slow);
  constexpr std::size_t kRounds = 300;
  std::size_t echoed = 0;
  std::size_t sent = 0;
  {
    ServerThread running(server);
    RawClient socket(server.port());
    std::mt19937 random(7);
    std::uniform_int_distribution<std::size_t> size(1, 3 * InputEcho::kBuffer);
    for (std::size_t r = 0; r < kRounds && echoed == sent; ++r) {
      const std::size_t first = r % 5 == 0 ? InputEcho::kBuffer : size(random);
      const std::size_t second = r % 5 == 0 ? 1 : size(random);
      const std::vector<std::byte> out = patterned(0, sent, first + second);
      socket.send(std::span(out).first(first));
      std::this_thread::sleep_for(std::chrono::microseconds(r % 4 * 50));
      socket.send(std::span(out).subspan(first));
      sent += out.size();
      const auto back = socket.read(out.size());
      for (std::size_t i = 0; i < back.size() && back[i] == out[i]; ++i) ++echoed;
    }
  }
  EXPECT_EQ(echoed, sent);
  expect_every_connection_used_it(1);
}

// Bytes, then the end (or a reset), that arrive together while the loop is
// busy: the read that takes the bytes is short, yet the end is still to be
// read. The connection must read on rather than wait for input that will
// never come. Each round's connection must end as `expected`.
void bytes_then_the_end(net::Server& server, Record& record, bool reset, net::CloseReason::Kind expected) {
  const std::array<std::byte, 3> hello{std::byte{1}, std::byte{2}, std::byte{3}};
  constexpr std::size_t kRounds = 8;
  for (std::size_t round = 0; round < kRounds; ++round) {
    RawClient socket(server.port());
    socket.send(hello);
    ASSERT_TRUE(record.wait_read((2 * round + 1) * hello.size())) << round;  // open, and waiting for input
    hold(server.workers().loop(0), 30ms);
    socket.send(hello);
    if (reset) {
      socket.reset();
    } else {
      socket.shutdown_write();
      ASSERT_EQ(socket.read(2 * hello.size()).size(), 2 * hello.size()) << round;
      ASSERT_TRUE(socket.peer_closed()) << "round " << round << ": the server never ended the connection";
    }
    ASSERT_TRUE(record.wait_ended(round + 1)) << "round " << round << ": the end that came with the bytes was missed";
    ASSERT_EQ(record.bytes_read.load(), (2 * round + 2) * hello.size()) << round;
  }
  const std::lock_guard lock(record.mutex);
  for (const auto kind : record.endings) EXPECT_EQ(kind, expected) << net::to_string(kind);
}

TEST_P(ConnectionInputs, BytesAndTheEndThatArriveTogetherAreBothSeen) {
  net::Server& server = serve(InputEcho::Style::plain);
  ServerThread running(server);
  bytes_then_the_end(server, record_, false, net::CloseReason::Kind::peer_closed);
}

// With a reset, to a server that never writes: only the read path can see it,
// as an error, not an orderly end.
TEST_P(ConnectionInputs, BytesAndAResetThatArriveTogetherAreBothSeen) {
  net::Server& server = serve(InputEcho::Style::silent);
  ServerThread running(server);
  bytes_then_the_end(server, record_, true, net::CloseReason::Kind::io_error);
}

// The client sends 16 MiB and reads nothing for a while: the echoes fill the
// output to high water and reading stops; it starts again as they drain.
TEST_P(ConnectionInputs, ReadingStopsAtHighWaterAndResumesWithEveryByteInOrder) {
  net::ServerOptions options = offering(GetParam());
  options.connection_limits.high_water = 256 * 1024;
  options.connection_limits.low_water = 64 * 1024;
  net::Server& server = serve(InputEcho::Style::plain, options);
  constexpr std::size_t kBytes = 16u << 20;
  std::size_t intact = 0;
  {
    ServerThread running(server);
    intact = send_all_then_read_late(server.port(), kBytes);
  }
  EXPECT_EQ(intact, kBytes);
  expect_every_connection_used_it(1);
}

// Reading paused after every read of 100 bytes and resumed on the loop's
// next turn: what the input holds meanwhile is read when it resumes.
TEST_P(ConnectionInputs, APausedConnectionReadsWhatCameWhenItResumes) {
  net::Server& server = serve(InputEcho::Style::pausing);
  constexpr std::size_t kBytes = 200'000;
  std::size_t echoed = 0;
  {
    ServerThread running(server);
    RawClient socket(server.port());
    echoed = round_trips(socket, 0, kBytes, 10'000);
  }
  EXPECT_EQ(echoed, kBytes);
  expect_every_connection_used_it(1);
}

// Bytes and the peer's end that come while reading is paused: the loop sees
// their edge with nothing waiting for input. Resumed, the connection must
// read the bytes and then the end, not wait for an edge that has passed.
TEST_P(ConnectionInputs, TheEndThatCameWhileReadingWasPausedIsSeenOnResuming) {
  net::Server& server = serve(InputEcho::Style::holding);
  ServerThread running(server);
  const std::array<std::byte, 3> hello{std::byte{1}, std::byte{2}, std::byte{3}};
  constexpr std::size_t kRounds = 4;
  for (std::size_t round = 0; round < kRounds; ++round) {
    RawClient socket(server.port());
    socket.send(hello);
    ASSERT_TRUE(record_.wait_read((2 * round + 1) * hello.size())) << round;  // read once, and paused
    socket.send(hello);
    socket.shutdown_write();
    std::this_thread::sleep_for(50ms);  // the loop, idle, takes the edge meanwhile
    std::shared_ptr<net::TcpConnection> connection;
    {
      const std::lock_guard lock(record_.mutex);
      connection = std::exchange(record_.held, nullptr);
    }
    ASSERT_NE(connection, nullptr) << round;
    asio::post(connection->get_executor(), [connection] { connection->resume_reading(); });
    ASSERT_TRUE(record_.wait_ended(round + 1)) << "round " << round << ": the end that came while paused was missed";
    ASSERT_EQ(record_.bytes_read.load(), (2 * round + 2) * hello.size()) << round;
  }
  expect_every_connection_used_it(kRounds);
  const std::lock_guard lock(record_.mutex);
  for (const auto kind : record_.endings) EXPECT_EQ(kind, net::CloseReason::Kind::peer_closed) << net::to_string(kind);
}

// bytes_then_the_end under TLS: the transport reads the socket itself, and
// its short read says nothing of a reset that came under the same edge (the
// kernel's count, which the transport asks, has the end but not a reset).
// The edge reported it, whichever wait took it: the connection must read on.
net::ServerOptions over_tls(net::ServerOptions options) {
  options.transport = server_transport(Link::tls);
  return options;
}

void a_record_then_the_end(net::Server& server, Record& record, bool reset, net::CloseReason::Kind expected) {
  const std::array<std::byte, 3> hello{std::byte{1}, std::byte{2}, std::byte{3}};
  constexpr std::size_t kRounds = 4;
  for (std::size_t round = 0; round < kRounds; ++round) {
    HandTlsClient client(server.port());
    ASSERT_TRUE(client.handshake()) << round;
    ASSERT_TRUE(client.send(hello)) << round;
    ASSERT_TRUE(record.wait_read((2 * round + 1) * hello.size())) << round;  // open, and waiting for input
    hold(server.workers().loop(0), 30ms);
    ASSERT_TRUE(client.send(hello)) << round;
    if (reset) {
      client.socket().reset();
    } else {
      client.socket().shutdown_write();  // no close_notify: only the socket's end says it
    }
    ASSERT_TRUE(record.wait_ended(round + 1)) << "round " << round << ": the end that came with the record was missed";
    ASSERT_EQ(record.bytes_read.load(), (2 * round + 2) * hello.size()) << round;
  }
  const std::lock_guard lock(record.mutex);
  for (const auto kind : record.endings) EXPECT_EQ(kind, expected) << net::to_string(kind);
}

TEST_P(ConnectionInputs, UnderTlsARecordAndTheEndThatArriveTogetherAreBothSeen) {
  net::Server& server = serve(InputEcho::Style::silent, over_tls(offering(GetParam())));
  ServerThread running(server);
  a_record_then_the_end(server, record_, false, net::CloseReason::Kind::peer_closed);
}

TEST_P(ConnectionInputs, UnderTlsARecordAndAResetThatArriveTogetherAreBothSeen) {
  net::Server& server = serve(InputEcho::Style::silent, over_tls(offering(GetParam())));
  ServerThread running(server);
  a_record_then_the_end(server, record_, true, net::CloseReason::Kind::io_error);
}

// Connections that wait for input, however they wait, are closed by a stop.
TEST_P(ConnectionInputs, AStopClosesConnectionsThatWaitForInput) {
  net::Server& server = serve(InputEcho::Style::plain);
  constexpr std::size_t kClients = 12;
  std::vector<std::unique_ptr<RawClient>> clients;
  auto running = std::make_unique<ServerThread>(server);
  for (std::size_t i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<RawClient>(server.port()));
    ASSERT_EQ(round_trips(*clients.back(), i, 100, 100), 100u);  // open and waiting
  }
  auto stopped = std::async(std::launch::async, [&] { running.reset(); });
  ASSERT_EQ(stopped.wait_for(20s), std::future_status::ready) << "the server did not stop";
  for (const auto& c : clients) EXPECT_TRUE(c->peer_closed());
  const std::lock_guard lock(record_.mutex);
  ASSERT_EQ(record_.endings.size(), kClients);
  for (const auto kind : record_.endings) EXPECT_EQ(kind, net::CloseReason::Kind::shutdown);
}

INSTANTIATE_TEST_SUITE_P(Each, ConnectionInputs,
                         ::testing::Values(Input::Kind::reactor, Input::Kind::edge, Input::Kind::spin,
                                           Input::Kind::io_uring),
                         name);

}  // namespace
}  // namespace volley::test
