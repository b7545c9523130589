// Busy polling in process. On a busy-polling loop of the loop-per-thread
// design, connections waiting for input are read by the spinning loop itself
// (net/spin_readers.hpp), up to a few at a time; the rest wait on the reactor.
// These tests check that both kinds deliver every byte in order, that reading
// pauses and resumes under backpressure while spinning, and that a loop whose
// connections spin still returns once they have all closed. Each checks the
// loop's own counts too, so a loop that never spun would fail them.
#include <array>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include <volley/net/loop_pool.hpp>
#include <volley/net/server.hpp>
#include <volley/net/tcp_connection.hpp>

#include "byte_echo.hpp"
#include "raw_client.hpp"
#include "say_and_close.hpp"
#include "server_thread.hpp"
#include "volley/net/spin_readers.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

const net::detail::SpinReaders::Stats& spin_stats(asio::io_context& loop) {
  return asio::use_service<net::detail::SpinReaders>(loop).stats();
}

// The counts of a running loop, read on the loop's own thread.
net::detail::SpinReaders::Stats spin_stats_now(asio::io_context& loop) {
  std::promise<net::detail::SpinReaders::Stats> counts;
  asio::post(loop, [&] { counts.set_value(spin_stats(loop)); });
  return counts.get_future().get();
}

using ByteEcho = test::ByteEcho<16 * 1024>;

TEST(BusyPoll, MoreConnectionsThanCanSpinAllEchoEveryByteInOrder) {
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1, .busy_poll = true};
  options.handle_signals = false;
  net::Server server(options);
  server.listen([](std::size_t) { return std::make_unique<ByteEcho>(); });
  constexpr std::size_t kClients = 2 * net::detail::SpinReaders::kMaxConnections;
  constexpr std::size_t kBytes = 200 * 1000;
  std::vector<std::size_t> echoed(kClients, 0);
  {
    ServerThread running(server);
    std::vector<std::unique_ptr<RawClient>> sockets;
    for (std::size_t i = 0; i < kClients; ++i) sockets.push_back(std::make_unique<RawClient>(server.port()));
    // Every connection opens and waits for its first bytes: all but
    // kMaxConnections of them wait on the reactor.
    const std::uint64_t on_reactor = kClients - net::detail::SpinReaders::kMaxConnections;
    for (int i = 0; i < 500 && spin_stats_now(server.workers().loop(0)).refused < on_reactor; ++i)
      std::this_thread::sleep_for(10ms);
    EXPECT_EQ(spin_stats_now(server.workers().loop(0)).refused, on_reactor);
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < kClients; ++i)
      clients.emplace_back([&, i] { echoed[i] = round_trips(*sockets[i], i, kBytes, 1000 + 37 * i); });
    for (auto& c : clients) c.join();
  }  // stopped and joined: the loop's counts may be read now
  for (std::size_t i = 0; i < kClients; ++i) EXPECT_EQ(echoed[i], kBytes) << "client " << i;
  const auto& stats = spin_stats(server.workers().loop(0));
  EXPECT_GT(stats.inputs, 0u) << "no connection's input was found by spinning";
  EXPECT_LE(stats.inputs, stats.checks);
}

// The client sends 24 MiB and reads nothing for a while: the server's echoes
// fill its output to high water, it stops reading, and it reads again as the
// client drains them. Every byte must come back, in order.
TEST(BusyPoll, ReadingPausesAtHighWaterAndResumesWhileSpinning) {
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1, .busy_poll = true};
  options.handle_signals = false;
  options.connection_limits.high_water = 256 * 1024;
  options.connection_limits.low_water = 64 * 1024;
  net::Server server(options);
  server.listen([](std::size_t) { return std::make_unique<ByteEcho>(); });
  constexpr std::size_t kBytes = 24u << 20;
  std::size_t intact = 0;
  {
    ServerThread running(server);
    intact = send_all_then_read_late(server.port(), kBytes);
  }
  EXPECT_EQ(intact, kBytes);
  const auto& stats = spin_stats(server.workers().loop(0));
  EXPECT_GT(stats.inputs, 0u);
}

// A client of its own on a busy-polling loop: connections spin while they
// wait for their echoes, and the loop, released, returns once they have
// closed (a connection waiting on spinning reads keeps its loop running;
// none is left holding it after the end).
TEST(BusyPoll, ALoopWhoseConnectionsSpinReturnsOnceTheyHaveAllClosed) {
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1};
  options.handle_signals = false;
  net::Server server(options);
  server.listen([](std::size_t) { return std::make_unique<ByteEcho>(); });
  ServerThread running(server);
  net::LoopPool loops(1, true);
  expect_loop_returns_after_say_and_close(loops, server.port(), 3);
  EXPECT_GT(spin_stats(loops.loop(0)).inputs, 0u) << "the client connections never spun";
}

// In the thread-pool design nothing spins: its loop is run by several threads.
TEST(BusyPoll, ThreadPoolLoopsDoNotSpinOnReads) {
  net::LoopPool pool(2, true, net::Design::thread_pool);
  EXPECT_FALSE(asio::has_service<net::detail::SpinReaders>(pool.loop(0)));
  net::LoopPool loops(2, true);
  EXPECT_TRUE(asio::has_service<net::detail::SpinReaders>(loops.loop(0)));
  EXPECT_TRUE(asio::has_service<net::detail::SpinReaders>(loops.loop(1)));
  net::LoopPool sleeping(1, false);
  EXPECT_FALSE(asio::has_service<net::detail::SpinReaders>(sleeping.loop(0)));
}

}  // namespace
}  // namespace volley::test
