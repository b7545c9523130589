// Busy polling in process. On a busy-polling loop of the loop-per-thread
// design, connections waiting for input are read by the spinning loop itself
// (net/spin_readers.hpp), up to a few at a time; the rest wait on the reactor.
// These tests check that both kinds deliver every byte in order, that reading
// pauses and resumes under backpressure while spinning, and that a loop whose
// connections spin still returns once they have all closed. Each checks the
// loop's own counts too, so a loop that never spun would fail them.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
#include "volley/net/edge_read_wait.hpp"  // VOLLEY_HAS_EDGE_READ_WAIT
#include "volley/net/reactor_membership.hpp"
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

// The port `fd` is bound to (local) or connected to (peer), or 0.
std::uint16_t port_of(int fd, bool peer) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  const int r = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length)
                     : ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return r == 0 && address.sin_family == AF_INET ? ntohs(address.sin_port) : 0;
}

// The server's end of `client`'s connection (in this process): -1 when not found.
int server_end_of(const RawClient& client, int server_port) {
  const std::uint16_t client_port = port_of(client.fd(), false);
  for (int fd = 0; fd < 4096; ++fd)
    if (fd != client.fd() && port_of(fd, false) == server_port && port_of(fd, true) == client_port) return fd;
  return -1;
}

// Whether socket `fd` has TCP_INQ on: -1 when it cannot be asked.
int counts_input(int fd) {
  int on = -1;
  socklen_t length = sizeof on;
  return fd >= 0 && ::getsockopt(fd, IPPROTO_TCP, TCP_INQ, &on, &length) == 0 ? on : -1;
}

// Whether some epoll instance of this process has socket `fd` registered with
// EPOLLRDHUP (the peer's end reported with its edge), read from
// /proc/self/fdinfo: 1 or 0, -1 when no epoll instance has it at all.
int reports_peer_end(int fd) {
  int found = -1;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    if (std::filesystem::read_symlink(entry.path(), error).string() != "anon_inode:[eventpoll]") continue;
    std::ifstream info("/proc/self/fdinfo/" + entry.path().filename().string());
    for (std::string line; std::getline(info, line);) {
      int target = -1;
      unsigned events = 0;
      if (std::sscanf(line.c_str(), "tfd: %d events: %x", &target, &events) == 2 && target == fd)
        found = std::max(found, (events & EPOLLRDHUP) != 0 ? 1 : 0);
    }
  }
  return found;
}

// A spinning connection reads with plain receives and waits, past the
// spinning places, on the reactor: its socket never has the kernel count what
// each read left (TCP_INQ), which is work in every receive on a round trip's
// path. The same server on a loop that sleeps uses the edge wait, which reads
// with plain receives too and learns of the peer's end from the edge that
// brings it (EPOLLRDHUP in its registration), where the spinning sockets' wait
// on the reactor does not need it: the check sees the difference.
TEST(BusyPoll, ASpinningConnectionsReceivesCarryNoCountOfWhatTheyLeft) {
  for (const bool busy : {true, false}) {
    net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1, .busy_poll = busy};
    options.handle_signals = false;
    net::Server server(options);
    server.listen([](std::size_t) { return std::make_unique<ByteEcho>(); });
    ServerThread running(server);
    // More than can spin: some wait on the reactor.
    std::vector<std::unique_ptr<RawClient>> sockets;
    for (std::size_t i = 0; i <= net::detail::SpinReaders::kMaxConnections; ++i) {
      sockets.push_back(std::make_unique<RawClient>(server.port()));
      ASSERT_EQ(round_trips(*sockets.back(), i, 3000, 100), 3000u) << (busy ? "busy " : "sleeping ") << i;
    }
#if defined(VOLLEY_HAS_EDGE_READ_WAIT)
    const int edge_wait = busy ? 0 : 1;
#else
    const int edge_wait = 0;
#endif
    for (std::size_t i = 0; i < sockets.size(); ++i) {
      const int fd = server_end_of(*sockets[i], server.port());
      ASSERT_GE(fd, 0) << i;
      EXPECT_EQ(counts_input(fd), 0) << (busy ? "busy " : "sleeping ") << i;
      // (A spinning socket may have left the reactor: not registered at all.)
      EXPECT_EQ(std::max(reports_peer_end(fd), 0), edge_wait) << (busy ? "busy " : "sleeping ") << i;
    }
  }
}

// Echoes, and keeps each connection it serves, in the order they opened, so
// a test can pause and resume them on their loop.
class KeptEcho final : public net::StreamHandler {
 public:
  using Kept = std::vector<std::shared_ptr<net::TcpConnection>>;
  explicit KeptEcho(Kept& kept) : kept_(kept) {}
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_open(net::TcpConnection& c) override { kept_.push_back(c.shared_from_this()); }  // on the one loop
  void on_data(net::TcpConnection& c, std::size_t n) override { c.send(std::span(buffer_).first(n)); }
  void on_close(net::TcpConnection&, const net::CloseReason&) override {}

 private:
  Kept& kept_;
  std::array<std::byte, 4096> buffer_{};
};

// Runs `f` on `loop` and waits for it.
template <class F>
auto on_loop(asio::io_context& loop, F f) {
  std::promise<decltype(f())> result;
  asio::post(loop, [&] { result.set_value(f()); });
  return result.get_future().get();
}

// A spinning socket leaves the reactor; when its connection pauses, another
// takes its place, and on resuming it finds none: it waits on the reactor
// again, which needs the socket back in. Missing that, its wait fails at once
// (Asio: bad descriptor) and the connection ends with its bytes unechoed.
TEST(BusyPoll, ASocketThatSpunWaitsOnTheReactorAgainWhenItLosesItsPlace) {
  if (!net::detail::can_leave_reactor()) GTEST_SKIP() << "sockets stay in the reactor here (not Asio's epoll backend)";
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1, .busy_poll = true};
  options.handle_signals = false;
  net::Server server(options);
  KeptEcho::Kept kept;  // used on the loop only
  server.listen([&kept](std::size_t) { return std::make_unique<KeptEcho>(kept); });
  constexpr std::size_t kPlaces = net::detail::SpinReaders::kMaxConnections;
  ServerThread running(server);
  asio::io_context& loop = server.workers().loop(0);
  auto counts = [&] { return spin_stats_now(loop); };
  auto wait_for = [&](auto done) {
    for (int i = 0; i < 1000 && !done(counts()); ++i) std::this_thread::sleep_for(10ms);
    return done(counts());
  };
  // kPlaces connections spin, out of the reactor; one more waits on it.
  std::vector<std::unique_ptr<RawClient>> sockets;
  for (std::size_t i = 0; i <= kPlaces; ++i) {
    sockets.push_back(std::make_unique<RawClient>(server.port()));
    ASSERT_EQ(round_trips(*sockets.back(), i, 300, 100), 300u) << i;
  }
  ASSERT_TRUE(wait_for([&](const auto& c) { return c.left_reactor == kPlaces && c.refused >= 1; }))
      << "left " << counts().left_reactor << ", refused " << counts().refused;
  // The first pauses and gives up its place (at the spinning loop's next look
  // at it); the last one's input takes it.
  const std::shared_ptr<net::TcpConnection> first = on_loop(loop, [&] { return kept.front(); });
  asio::post(loop, [first] { first->pause_reading(); });
  ASSERT_TRUE(wait_for([&](const auto&) {
    return on_loop(loop, [&] { return asio::use_service<net::detail::SpinReaders>(loop).has_room(); });
  }));
  ASSERT_EQ(round_trips(*sockets.back(), kPlaces, 300, 100), 300u);
  ASSERT_TRUE(wait_for([&](const auto& c) { return c.left_reactor == kPlaces + 1; })) << counts().left_reactor;
  // Resumed, the first finds no place and waits on the reactor; every byte still comes back.
  asio::post(loop, [first] { first->resume_reading(); });
  EXPECT_EQ(round_trips(*sockets.front(), 0, 3000, 100), 3000u);
  EXPECT_EQ(counts().rejoined_reactor, 1u);
  for (std::size_t i = 0; i <= kPlaces; ++i) EXPECT_EQ(round_trips(*sockets[i], i, 1000, 100), 1000u) << i;
}

// The client sends 24 MiB and reads nothing for a while: the server's echoes
// fill its output to high water, it stops reading, and it reads again as the
// client drains them. Every byte must come back, in order. A few round trips
// first, until the connection spins: where sockets leave the reactor to
// spin, its first echo the kernel cannot take then waits on the reactor,
// which needs the socket back in (missing that, the write fails and the
// bytes stop). Without them, a loaded machine may leave the reactor only
// once the last echo is out. And the client reads only once the socket is
// back: reading after a fixed time, a slow server (ThreadSanitizer, a busy
// machine) may never fill the kernel's buffers, and no echo waits at all.
TEST(BusyPoll, ReadingPausesAtHighWaterAndResumesWhileSpinning) {
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1, .busy_poll = true};
  options.handle_signals = false;
  options.connection_limits.high_water = 256 * 1024;
  options.connection_limits.low_water = 64 * 1024;
  net::Server server(options);
  server.listen([](std::size_t) { return std::make_unique<ByteEcho>(); });
  asio::io_context& loop = server.workers().loop(0);
  const bool leaves = net::detail::can_leave_reactor();
  constexpr std::size_t kBytes = 24u << 20;
  std::size_t intact = 0;
  {
    ServerThread running(server);
    RawClient socket(server.port());
    ASSERT_EQ(round_trips(socket, 1, 3000, 100), 3000u);
    for (int i = 0; i < 1000 && spin_stats_now(loop).inputs == 0; ++i) std::this_thread::sleep_for(10ms);
    for (int i = 0; leaves && i < 1000 && spin_stats_now(loop).left_reactor == 0; ++i)
      std::this_thread::sleep_for(10ms);
    const auto before = spin_stats_now(loop);
    ASSERT_GT(before.inputs, 0u);
    if (leaves) {
      ASSERT_EQ(before.left_reactor, 1u);
      ASSERT_EQ(before.rejoined_reactor, 0u);
    }
    intact = send_all_then_read_late(socket, kBytes, [&] {
      if (!leaves) return std::this_thread::sleep_for(300ms);
      for (int i = 0; i < 1000 && spin_stats_now(loop).rejoined_reactor == 0; ++i) std::this_thread::sleep_for(10ms);
    });
  }
  EXPECT_EQ(intact, kBytes);
  if (leaves) {
    EXPECT_GT(spin_stats(loop).rejoined_reactor, 0u);
  }
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
