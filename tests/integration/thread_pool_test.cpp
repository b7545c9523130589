// The thread-pool design in process: one io_context run by two threads, each
// connection on a strand of its own. Sessions with heartbeat timers echo
// every message of many clients at once, the shutdown closes every
// connection on its own strand, and the acceptor's per-worker bookkeeping
// holds (run under ThreadSanitizer by `make tsan`).
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include <volley/net/loop_pool.hpp>
#include <volley/net/server.hpp>
#include <volley/net/session.hpp>
#include <volley/wire/checked.hpp>

#include "raw_client.hpp"
#include "server_thread.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;

class PoolEcho final : public net::SessionEvents {
 public:
  PoolEcho(std::atomic<std::uint64_t>& messages, std::atomic<int>& open) : messages_(messages), open_(open) {}
  void on_open(net::Session&) override { open_.fetch_add(1); }
  void on_message(net::Session& s, const net::Message& message) override {
    messages_.fetch_add(1, std::memory_order_relaxed);
    s.send(message.bytes);
  }
  void on_close(net::Session&, const net::CloseReason&) override { open_.fetch_sub(1); }

 private:
  std::atomic<std::uint64_t>& messages_;
  std::atomic<int>& open_;
};

// Sends `count` numbered frames and reads until every echo is back, in order
// (the server's heartbeats, sent while a client is quiet, are skipped).
// Returns the number echoed in order.
int talk(int port, int id, int count) {
  RawClient socket(port);
  wire::checked::FrameDecoder decoder(1024);
  int next = 0;
  for (int k = 0; k < count; ++k) {
    const std::string text = std::to_string(id) + ":" + std::to_string(k);
    std::vector<std::byte> frame(wire::checked::kHeaderSize + text.size());
    std::error_code ec;
    wire::checked::encode(wire::checked::FrameType::message, std::as_bytes(std::span(text)), frame, ec);
    socket.send(frame);
    if (k % 10 == 9) std::this_thread::sleep_for(2ms);  // quiet moments: heartbeats go out
  }
  std::vector<std::byte> pending;  // read, not yet fed to the decoder
  std::size_t taken = 0;
  while (next < count) {
    const auto r = decoder.next();
    if (r.status == wire::checked::DecodeStatus::frame) {
      if (r.frame.type == wire::checked::FrameType::heartbeat) continue;
      const std::string got(reinterpret_cast<const char*>(r.frame.payload.data()), r.frame.payload.size());
      if (got != std::to_string(id) + ":" + std::to_string(next)) return next;
      ++next;
      continue;
    }
    if (r.status == wire::checked::DecodeStatus::rejected) return next;
    if (taken == pending.size()) {
      pending = socket.read_some(4096);  // empty after 5 s of nothing
      taken = 0;
      if (pending.empty()) return next;
    }
    taken += decoder.feed(std::span(pending).subspan(taken));
  }
  return next;
}

TEST(ThreadPoolDesign, SessionsWithHeartbeatTimersEchoEveryMessageOfManyClientsInOrder) {
  std::atomic<std::uint64_t> messages{0};
  std::atomic<int> open{0};
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 2};
  options.design = net::Design::thread_pool;
  net::Server server(options);
  net::SessionOptions session;
  session.heartbeat_interval = 5ms;  // timers firing on the strands all the time
  session.heartbeat_misses = 2000;   // raw clients send none: never call them silent here
  server.listen([&](std::size_t) {
    return std::make_unique<net::Session>(net::make_checked_codec(1024), session,
                                          std::make_unique<PoolEcho>(messages, open));
  });
  ASSERT_EQ(server.workers().design(), net::Design::thread_pool);
  ServerThread running(server);
  constexpr int kClients = 16, kMessages = 300;
  std::vector<int> echoed(kClients, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] { echoed[static_cast<std::size_t>(i)] = talk(server.port(), i, kMessages); });
  for (auto& c : clients) c.join();
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(echoed[static_cast<std::size_t>(i)], kMessages) << "client " << i;
  EXPECT_EQ(messages.load(), static_cast<std::uint64_t>(kClients) * kMessages);
}

// Connections still open when the server stops are closed, each on its own
// strand; the stop returns once all have closed (well before its deadline).
TEST(ThreadPoolDesign, AStopClosesEveryOpenConnection) {
  std::atomic<std::uint64_t> messages{0};
  std::atomic<int> open{0};
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 2};
  options.design = net::Design::thread_pool;
  net::Server server(options);
  net::SessionOptions quiet;
  quiet.heartbeat_interval = std::chrono::milliseconds(0);  // the clients' only input is the end of stream
  server.listen([&](std::size_t) {
    return std::make_unique<net::Session>(net::make_checked_codec(1024), quiet,
                                          std::make_unique<PoolEcho>(messages, open));
  });
  std::thread runner([&] { server.run(); });
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 40; ++i) clients.push_back(std::make_unique<RawClient>(server.port()));
  for (int i = 0; i < 500 && open.load() < 40; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(open.load(), 40);  // (no ASSERT: the server thread must be stopped and joined below either way)
  const auto start = std::chrono::steady_clock::now();
  server.stop();
  // Each client sees the server's end of stream and closes, as a peer does.
  for (auto& c : clients) {
    EXPECT_TRUE(c->peer_closed());
    c->close();
  }
  runner.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s) << "the stop waited for its deadline";
  EXPECT_EQ(open.load(), 0);
  EXPECT_EQ(server.aborted_at_shutdown(), 0u);
}

// A program whose work is one object and no listener (the netem relay, an
// ARQ receiver) runs it on the server's serial executor: in either design its
// handlers never run at once (the counter is not atomic: ThreadSanitizer
// would see two), and a stop reaches it there before run() returns.
class SerialExecutor : public ::testing::TestWithParam<net::Design> {};

TEST_P(SerialExecutor, RunsTheObjectsHandlersOneAtATimeAndItsStopBeforeRunReturns) {
  net::Server server({.threads = 3, .design = GetParam(), .handle_signals = false});
  const auto serial = server.make_serial_executor();
  constexpr int kHandlers = 20000;
  int counted = 0;  // the object's state: no lock
  std::atomic<int> inside{0}, overlaps{0}, handled{0};
  volatile int spin_sink = 0;
  bool stopped_on_serial = false;
  server.on_stop([&] {
    boost::asio::dispatch(serial, [&] { stopped_on_serial = counted == kHandlers; });
  });
  for (int i = 0; i < kHandlers; ++i) {
    boost::asio::post(serial, [&] {
      if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
      // Long enough for another thread to come in, were it let (a store the
      // compiler must keep, 200 times).
      for (int spin = 0; spin < 200; ++spin) spin_sink = spin;
      ++counted;
      if (handled.fetch_add(1) + 1 == kHandlers) server.stop();
      inside.fetch_sub(1);
    });
  }
  server.run();
  EXPECT_EQ(counted, kHandlers);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_TRUE(stopped_on_serial) << "the stop step did not run on the serial executor after the last handler";
}

INSTANTIATE_TEST_SUITE_P(ThreadPoolDesign, SerialExecutor,
                         ::testing::Values(net::Design::loop_per_thread, net::Design::thread_pool),
                         [](const auto& info) { return std::string(net::to_string(info.param)) == "thread-pool" ? "ThreadPool" : "LoopPerThread"; });

// LoopPool::run(): a client whose main thread would only wait runs the
// first loop itself. Each loop of the loop-per-thread design is run by one
// thread, the first by the caller's, and run() returns once every loop has
// run out of work.
TEST(ThreadPoolDesign, RunGivesTheFirstLoopToTheCallingThreadAndEachOtherLoopAThreadOfItsOwn) {
  net::LoopPool loops(3);
  std::array<std::thread::id, 3> ran_on{};
  std::atomic<int> ran{0};
  for (std::size_t i = 0; i < 3; ++i)
    boost::asio::post(loops.loop(i), [&ran_on, &ran, i] {
      ran_on[i] = std::this_thread::get_id();
      ran.fetch_add(1);
    });
  loops.release();
  loops.run();
  ASSERT_EQ(ran.load(), 3) << "run() returned before every loop had run its work";
  EXPECT_EQ(ran_on[0], std::this_thread::get_id());
  EXPECT_NE(ran_on[1], std::this_thread::get_id());
  EXPECT_NE(ran_on[2], std::this_thread::get_id());
  EXPECT_NE(ran_on[1], ran_on[2]);
}

// In the thread-pool design the caller is one of the pool's threads: three
// handlers that each wait for the other two to start all finish only when
// three threads run the one loop at once, the caller's among them.
TEST(ThreadPoolDesign, RunMakesTheCallingThreadOneOfThePoolsThreads) {
  net::LoopPool loops(3, false, net::Design::thread_pool);
  std::mutex lock;
  std::condition_variable all_started;
  std::set<std::thread::id> threads;
  int started = 0, met = 0;
  for (int i = 0; i < 3; ++i)
    boost::asio::post(loops.loop(0), [&] {
      std::unique_lock held(lock);
      threads.insert(std::this_thread::get_id());
      ++started;
      all_started.notify_all();
      // Bounded: with fewer threads than handlers the test fails instead of hanging.
      if (all_started.wait_for(held, 5s, [&] { return started == 3; })) ++met;
    });
  loops.release();
  loops.run();
  EXPECT_EQ(met, 3) << "fewer than three threads ran the pool's loop";
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 1u) << "the calling thread ran none of the handlers";
}

}  // namespace
}  // namespace volley::test
