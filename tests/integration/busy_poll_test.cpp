// Busy polling in process. On a busy-polling loop of the loop-per-thread
// design, connections waiting for input are read by the spinning loop itself
// (net/spin_readers.hpp), up to a few at a time; the rest wait on the reactor.
// These tests check that both kinds deliver every byte in order, that reading
// pauses and resumes under backpressure while spinning, and that a loop whose
// connections spin still returns once they have all closed. Each checks the
// loop's own counts too, so a loop that never spun would fail them.
#include <array>
#include <atomic>
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
#include <volley/net/tcp_connect.hpp>
#include <volley/net/tcp_connection.hpp>

#include "raw_client.hpp"
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

// Echoes every byte it reads.
class ByteEcho final : public net::StreamHandler {
 public:
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_data(net::TcpConnection& c, std::size_t n) override { c.send(std::span(buffer_).first(n)); }
  void on_close(net::TcpConnection&, const net::CloseReason&) override {}

 private:
  std::array<std::byte, 16 * 1024> buffer_{};
};

std::byte pattern(std::size_t client, std::size_t i) {
  return static_cast<std::byte>((i * 131 + client * 17 + (i >> 12)) & 0xff);
}

// Sends `total` bytes of its pattern in pieces of `piece`, each after the
// echo of the one before (a round trip at a time), and checks every byte that
// comes back. Returns the bytes echoed correctly, in order.
std::size_t round_trips(const RawClient& socket, std::size_t client, std::size_t total, std::size_t piece) {
  std::vector<std::byte> out(piece);
  std::size_t done = 0;
  while (done < total) {
    const std::size_t n = std::min(piece, total - done);
    for (std::size_t i = 0; i < n; ++i) out[i] = pattern(client, done + i);
    socket.send(std::span(out).first(n));
    const auto back = socket.read(n);
    for (std::size_t i = 0; i < back.size(); ++i)
      if (back[i] != pattern(client, done + i)) return done + i;
    if (back.size() != n) return done + back.size();
    done += n;
  }
  return done;
}

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
    RawClient socket(server.port());
    std::thread sender([&] {
      std::vector<std::byte> out(256 * 1024);
      for (std::size_t done = 0; done < kBytes; done += out.size()) {
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern(0, done + i);
        socket.send(out);
      }
    });
    std::this_thread::sleep_for(300ms);  // the server's output backs up meanwhile
    bool wrong = false;
    while (intact < kBytes && !wrong) {
      const auto back = socket.read_some(64 * 1024);  // empty after 5 s of nothing
      if (back.empty()) break;
      for (std::size_t i = 0; i < back.size() && !wrong; ++i) wrong = back[i] != pattern(0, intact + i);
      if (!wrong) intact += back.size();
    }
    sender.join();
  }
  EXPECT_EQ(intact, kBytes);
  const auto& stats = spin_stats(server.workers().loop(0));
  EXPECT_GT(stats.inputs, 0u);
}

// A client of its own on a busy-polling loop: connections spin while they
// wait for their echoes, and the loop, released, returns once they have
// closed (a connection waiting on spinning reads keeps its loop running;
// none is left holding it after the end).
class SayAndClose final : public net::StreamHandler {
 public:
  SayAndClose(std::string text, std::atomic<int>& matched) : text_(std::move(text)), matched_(matched) {}
  std::span<std::byte> read_buffer() override { return std::span(buffer_).subspan(got_); }
  void on_open(net::TcpConnection& c) override { c.send(std::as_bytes(std::span(text_))); }
  void on_data(net::TcpConnection& c, std::size_t n) override {
    got_ += n;
    if (got_ < text_.size()) return;
    if (std::string(reinterpret_cast<const char*>(buffer_.data()), got_) == text_) matched_.fetch_add(1);
    c.close({net::CloseReason::Kind::local_close, {}});
  }
  void on_close(net::TcpConnection&, const net::CloseReason&) override {}

 private:
  std::string text_;
  std::atomic<int>& matched_;
  std::array<std::byte, 256> buffer_{};
  std::size_t got_ = 0;
};

TEST(BusyPoll, ALoopWhoseConnectionsSpinReturnsOnceTheyHaveAllClosed) {
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1};
  options.handle_signals = false;
  net::Server server(options);
  server.listen([](std::size_t) { return std::make_unique<ByteEcho>(); });
  ServerThread running(server);

  constexpr int kConnections = 3;
  std::atomic<int> matched{0};
  std::atomic<int> failed{0};
  net::LoopPool loops(1, true);
  std::vector<std::shared_ptr<net::TcpConnection>> connections(kConnections);
  asio::io_context& loop = loops.loop(0);
  asio::post(loop, [&] {
    for (int i = 0; i < kConnections; ++i) {
      boost::system::error_code ec;
      auto socket = net::connect_tcp(loop, "127.0.0.1", server.port(), 5s, ec);
      if (ec) {
        failed.fetch_add(1);
        continue;
      }
      connections[static_cast<std::size_t>(i)] = std::make_shared<net::TcpConnection>(
          std::move(socket), std::make_unique<SayAndClose>("hello from connection " + std::to_string(i), matched));
      connections[static_cast<std::size_t>(i)]->start();
    }
  });
  loops.start();
  loops.release();
  auto joined = std::async(std::launch::async, [&] { loops.join(); });
  if (joined.wait_for(10s) != std::future_status::ready) {
    ADD_FAILURE() << "the loop did not return after its connections closed";
    loops.stop();
  }
  joined.wait();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(matched.load(), kConnections);
  for (const auto& c : connections) EXPECT_TRUE(c == nullptr || c->closed());
  EXPECT_GT(spin_stats(loop).inputs, 0u) << "the client connections never spun";
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
