// Receiving through io_uring (ReceivePath::io_uring, net/uring_receive.hpp):
// each plain TCP connection keeps a multishot receive in its loop's ring,
// into buffers every connection of the loop shares. These tests check that
// every byte still arrives once and in order through each way a buffer can
// be left: read whole, read in part (the rest spilled), held while reading
// is paused (the receive cancelled at the spill's limit and armed again), and
// a burst larger than all the buffers (the receive ends with ENOBUFS and
// starts again); that the end and a reset after bytes are both seen; and that
// loops and servers still stop. Each reads the receiver's own counts, so a
// connection that quietly read through the reactor would fail them.
#include <array>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include <volley/net/io_backend.hpp>
#include <volley/net/loop_pool.hpp>
#include <volley/net/server.hpp>
#include <volley/net/tcp_connection.hpp>

#include "byte_echo.hpp"
#include "raw_client.hpp"
#include "say_and_close.hpp"
#include "server_thread.hpp"
#include "volley/net/uring_receive.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using Receiver = net::detail::UringReceiver;

// Read once the loop has stopped (its thread joined).
const Receiver::Stats& receiver_stats(asio::io_context& loop) { return asio::use_service<Receiver>(loop).stats(); }

net::ServerOptions uring_server(std::size_t threads) {
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = threads};
  options.receive = net::ReceivePath::io_uring;
  options.handle_signals = false;
  return options;
}

#define SKIP_WITHOUT_IO_URING_RECEIVE()                                        \
  if (const std::string problem = net::io_uring_receive_problem(); !problem.empty()) \
  GTEST_SKIP() << problem

TEST(UringReceive, LoopsReceiveThroughTheRingWhereItRunsAndThroughTheReactorElsewhere) {
  const std::string problem = net::io_uring_receive_problem();
  net::LoopPool loops(2, false, net::Design::loop_per_thread, net::ReceivePath::io_uring);
  if (problem.empty()) {
    EXPECT_EQ(loops.receive_path(), net::ReceivePath::io_uring);
    EXPECT_TRUE(asio::has_service<Receiver>(loops.loop(0)));
    EXPECT_TRUE(asio::has_service<Receiver>(loops.loop(1)));
  } else {
    EXPECT_EQ(loops.receive_path(), net::ReceivePath::reactor) << problem;
    EXPECT_FALSE(asio::has_service<Receiver>(loops.loop(0)));
  }
  // One ring has one issuing thread: a loop that several threads run receives through the reactor.
  net::LoopPool pool(2, false, net::Design::thread_pool, net::ReceivePath::io_uring);
  EXPECT_EQ(pool.receive_path(), net::ReceivePath::reactor);
  EXPECT_FALSE(asio::has_service<Receiver>(pool.loop(0)));
  net::LoopPool plain(1);
  EXPECT_EQ(plain.receive_path(), net::ReceivePath::reactor);
  EXPECT_FALSE(asio::has_service<Receiver>(plain.loop(0)));
  EXPECT_THROW(Receiver(plain.loop(0), 3), std::invalid_argument) << "a buffer count that is not a power of two";
}

// Pieces up to 120 KB: several 32 KiB buffers each, and more than the
// handler's 16 KiB read buffer, so receives are read whole and in part.
TEST(UringReceive, ManyConnectionsOnTwoLoopsEchoEveryByteInOrder) {
  SKIP_WITHOUT_IO_URING_RECEIVE();
  net::Server server(uring_server(2));
  server.listen([](std::size_t) { return std::make_unique<ByteEcho<16 * 1024>>(); });
  constexpr std::size_t kClients = 16;
  constexpr std::size_t kBytes = 400 * 1000;
  std::vector<std::size_t> echoed;
  {
    ServerThread running(server);
    echoed = echo_from_clients(server.port(), kClients, kBytes, [](std::size_t i) { return 1000 + 7919 * i; });
  }
  for (std::size_t i = 0; i < kClients; ++i) EXPECT_EQ(echoed[i], kBytes) << "client " << i;
  const auto& first = receiver_stats(server.workers().loop(0));
  const auto& second = receiver_stats(server.workers().loop(1));
  EXPECT_GT(first.receives, 0u);
  EXPECT_GT(second.receives, 0u);
  EXPECT_EQ(first.arms + second.arms, kClients) << "one multishot receive per connection for its whole life";
}

// Echoes 100 bytes at a time, and pauses reading after each until the loop's
// next turn (as a handler that waits for something else would).
class PausingEcho final : public net::StreamHandler {
 public:
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_data(net::TcpConnection& c, std::size_t n) override {
    c.send(std::span(buffer_).first(n));
    c.pause_reading();
    asio::post(c.get_executor(), [connection = c.shared_from_this()] { connection->resume_reading(); });
  }
  void on_close(net::TcpConnection&, const net::CloseReason&) override {}

 private:
  std::array<std::byte, 100> buffer_{};
};

// Each receive of a 10 KB send is read in part in its batch (then reading
// pauses), and the rest reaches the handler from the spill.
TEST(UringReceive, BytesAHandlerDidNotTakeInItsBatchArriveFromTheSpillInOrder) {
  SKIP_WITHOUT_IO_URING_RECEIVE();
  net::Server server(uring_server(1));
  server.listen([](std::size_t) { return std::make_unique<PausingEcho>(); });
  constexpr std::size_t kBytes = 10'000;
  std::size_t echoed = 0;
  {
    ServerThread running(server);
    RawClient socket(server.port());
    echoed = round_trips(socket, 0, 20 * kBytes, kBytes);
  }
  EXPECT_EQ(echoed, 20 * kBytes);
  EXPECT_GT(receiver_stats(server.workers().loop(0)).spilled, 0u);
}

// The client sends 24 MiB and reads nothing for a while: the server's echoes
// fill its output to high water and it stops reading. The bytes still
// received go to the spill until its limit, where the receive is cancelled;
// reading again, the connection empties the spill and arms a new receive.
TEST(UringReceive, ReadingPausesAtHighWaterAndResumesWithEveryByteInOrder) {
  SKIP_WITHOUT_IO_URING_RECEIVE();
  net::ServerOptions options = uring_server(1);
  options.connection_limits.high_water = 256 * 1024;
  options.connection_limits.low_water = 64 * 1024;
  net::Server server(options);
  server.listen([](std::size_t) { return std::make_unique<ByteEcho<64 * 1024>>(); });
  constexpr std::size_t kBytes = 24u << 20;
  std::size_t intact = 0;
  {
    ServerThread running(server);
    intact = send_all_then_read_late(server.port(), kBytes);
  }
  EXPECT_EQ(intact, kBytes);
  const auto& stats = receiver_stats(server.workers().loop(0));
  EXPECT_GT(stats.held_back, 0u) << "the spill never reached its limit while reading was paused";
  EXPECT_GT(stats.arms, 1u) << "the receive was never armed again after it was held back";
}

// Four buffers for eight clients that each send 1 MiB at once: the kernel
// runs out of buffers within every batch, the receives end with ENOBUFS and
// start again once the batch gives its buffers back.
TEST(UringReceive, ABurstLargerThanEveryBufferIsReceivedWhole) {
  SKIP_WITHOUT_IO_URING_RECEIVE();
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1};
  options.handle_signals = false;
  net::Server server(options);
  Receiver::enable(server.workers().loop(0), 4);  // before any connection: the loop's receive path
  server.listen([](std::size_t) { return std::make_unique<ByteEcho<64 * 1024>>(); });
  constexpr std::size_t kClients = 8;
  constexpr std::size_t kBytes = 1 << 20;
  std::vector<std::size_t> intact(kClients, 0);
  {
    ServerThread running(server);
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < kClients; ++i)
      clients.emplace_back([&, i] {
        RawClient socket(server.port());
        std::thread sender([&] { socket.send(patterned(i, 0, kBytes)); });
        intact[i] = read_intact(socket, i, kBytes);
        sender.join();
      });
    for (auto& c : clients) c.join();
  }
  for (std::size_t i = 0; i < kClients; ++i) EXPECT_EQ(intact[i], kBytes) << "client " << i;
  const auto& stats = receiver_stats(server.workers().loop(0));
  EXPECT_GT(stats.no_buffers, 0u) << "the four buffers never ran out";
}

// Records how each connection ended.
struct Endings {
  std::mutex mutex;
  std::vector<net::CloseReason::Kind> kinds;
};

class EchoThenRecord final : public net::StreamHandler {
 public:
  explicit EchoThenRecord(Endings& endings) : endings_(endings) {}
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_data(net::TcpConnection& c, std::size_t n) override { c.send(std::span(buffer_).first(n)); }
  void on_close(net::TcpConnection&, const net::CloseReason& reason) override {
    const std::lock_guard lock(endings_.mutex);
    endings_.kinds.push_back(reason.kind);
  }

 private:
  Endings& endings_;
  std::array<std::byte, 4096> buffer_{};
};

TEST(UringReceive, TheEndAndAResetThatFollowBytesAreBothSeen) {
  SKIP_WITHOUT_IO_URING_RECEIVE();
  net::Server server(uring_server(1));
  Endings endings;
  server.listen([&](std::size_t) { return std::make_unique<EchoThenRecord>(endings); });
  std::unique_ptr<RawClient> other;  // open until the server has stopped
  {
    ServerThread running(server);
    // Bytes, then our end in the same breath: every byte comes back, then the server's end.
    RawClient ending(server.port());
    ending.send(patterned(1, 0, 5000));
    ending.shutdown_write();
    EXPECT_EQ(read_intact(ending, 1, 5000), 5000u);
    EXPECT_TRUE(ending.peer_closed());
    // Bytes, then a reset: the server sees an error, not an orderly end.
    {
      RawClient resetting(server.port());
      resetting.send(patterned(2, 0, 5000));
      resetting.reset();
    }
    // Another client is served throughout.
    other = std::make_unique<RawClient>(server.port());
    EXPECT_EQ(round_trips(*other, 3, 50'000, 5000), 50'000u);
    for (int i = 0; i < 500; ++i) {
      {
        const std::lock_guard lock(endings.mutex);
        if (endings.kinds.size() >= 2) break;
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  const std::lock_guard lock(endings.mutex);
  ASSERT_EQ(endings.kinds.size(), 3u);  // the third ends when the server stops
  EXPECT_EQ(endings.kinds[0], net::CloseReason::Kind::peer_closed);
  EXPECT_EQ(endings.kinds[1], net::CloseReason::Kind::io_error);
  EXPECT_EQ(endings.kinds[2], net::CloseReason::Kind::shutdown);
}

// Idle connections keep a receive armed; a stop must still close them all and return.
TEST(UringReceive, AServerStopClosesConnectionsThatWaitInTheRing) {
  SKIP_WITHOUT_IO_URING_RECEIVE();
  net::Server server(uring_server(2));
  server.listen([](std::size_t) { return std::make_unique<ByteEcho<4096>>(); });
  std::vector<std::unique_ptr<RawClient>> clients;
  auto running = std::make_unique<ServerThread>(server);
  for (int i = 0; i < 20; ++i) clients.push_back(std::make_unique<RawClient>(server.port()));
  EXPECT_EQ(round_trips(*clients.back(), 0, 1000, 1000), 1000u);  // accepted and served: the rest are too
  auto stopped = std::async(std::launch::async, [&] { running.reset(); });
  ASSERT_EQ(stopped.wait_for(20s), std::future_status::ready) << "the server did not stop";
  for (const auto& c : clients) EXPECT_TRUE(c->peer_closed());
}

// Connections one after another on one loop, each 200 round trips of 32
// bytes: between them no receive is armed and the loop stops watching its
// ring, so each first receive starts the wait again (the edge wait reads the
// eventfd there for a signal it may have missed). Every round trip comes
// back, and the loop wakes at most about twice for each (the ring signals
// its eventfd again as it posts the completions the loop asked for, which
// can wake the loop once more for nothing): a wait that completed at once
// instead of at the ring's next signal would spin the loop, tens of
// wake-ups a round trip.
TEST(UringReceive, ConnectionsOneAfterAnotherEachStartTheWaitAgainAndNeverSpinTheLoop) {
  SKIP_WITHOUT_IO_URING_RECEIVE();
  net::Server server(uring_server(1));
  server.listen([](std::size_t) { return std::make_unique<ByteEcho<4096>>(); });
  constexpr std::size_t kClients = 6;
  constexpr std::size_t kRoundTrips = 200;
  {
    ServerThread running(server);
    for (std::size_t i = 0; i < kClients; ++i) {
      RawClient socket(server.port());
      EXPECT_EQ(round_trips(socket, i, kRoundTrips * 32, 32), kRoundTrips * 32) << "client " << i;
    }
  }
  const auto& stats = receiver_stats(server.workers().loop(0));
  EXPECT_EQ(stats.arms, kClients);
  EXPECT_GE(stats.receives, kClients * kRoundTrips);
  // A wake-up a round trip, at most one more for nothing, and one for each connection's end.
  EXPECT_LE(stats.batches, 3 * stats.receives + 4 * kClients) << stats.receives << " receives";
}

// A client of its own on a loop that receives through the ring: the loop,
// released, returns once its connections have closed (an armed receive is
// work; an idle ring is not).
TEST(UringReceive, ALoopReturnsOnceItsConnectionsHaveClosed) {
  SKIP_WITHOUT_IO_URING_RECEIVE();
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1};
  options.handle_signals = false;
  net::Server server(options);
  server.listen([](std::size_t) { return std::make_unique<ByteEcho<4096>>(); });
  ServerThread running(server);
  net::LoopPool loops(1, false, net::Design::loop_per_thread, net::ReceivePath::io_uring);
  expect_loop_returns_after_say_and_close(loops, server.port(), 3);
  EXPECT_GT(receiver_stats(loops.loop(0)).receives, 0u) << "the client connections never received through the ring";
}

}  // namespace
}  // namespace volley::test
