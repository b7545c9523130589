// Waiting for input without re-arming epoll (net/edge_read_wait.hpp). A plain
// TCP connection on a loop one thread runs queues its wait for input as an
// operation that only the next edge completes, because it has just read the
// socket dry. These tests check where that wait is used, and that no input is
// ever missed by it: bytes that arrive while the last read is still being
// handled, reads that fill the buffer exactly, pauses and the peer's close.
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <cstddef>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <gtest/gtest.h>

#include <volley/net/server.hpp>
#include <volley/net/tcp_connection.hpp>

#include "raw_client.hpp"
#include "server_thread.hpp"
#include "volley/net/connection_input.hpp"
#include "volley/net/edge_read_wait.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

// Unused where the edge wait is not built (Asio on io_uring).
[[maybe_unused]] bool waits_without_rearming(asio::ip::tcp::socket& socket) {
  return net::detail::ConnectionInput::make_for(socket, nullptr)->kind() == net::detail::ConnectionInput::Kind::edge;
}

TEST(EdgeReadWait, OnlySocketsOnALoopOneThreadRunsWaitWithoutRearming) {
#if !defined(VOLLEY_HAS_EDGE_READ_WAIT)
  GTEST_SKIP() << "Asio's backend here is not epoll: every wait is async_wait";
#else
  asio::io_context one_thread(1);
  asio::ip::tcp::socket on_one_thread(one_thread, asio::ip::tcp::v4());
  EXPECT_TRUE(waits_without_rearming(on_one_thread));

  asio::io_context any_threads;  // the default hint: any number of threads may run it
  asio::ip::tcp::socket on_any_threads(any_threads, asio::ip::tcp::v4());
  EXPECT_FALSE(waits_without_rearming(on_any_threads));

  asio::io_context pool(4);
  asio::ip::tcp::socket on_pool(pool, asio::ip::tcp::v4());
  EXPECT_FALSE(waits_without_rearming(on_pool));

  // A strand's handlers may run on any thread that runs its loop.
  asio::ip::tcp::socket on_strand(asio::make_strand(one_thread), asio::ip::tcp::v4());
  EXPECT_FALSE(waits_without_rearming(on_strand));
#endif
}

// Echoes every byte it reads, slowly: each read is handled for a while, so the
// client's next bytes arrive between the read that drained the socket and the
// wait queued after it.
class SlowEcho final : public net::StreamHandler {
 public:
  explicit SlowEcho(std::atomic<int>* closed = nullptr) : closed_(closed) {}
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_data(net::TcpConnection& c, std::size_t n) override {
    std::this_thread::sleep_for(20us);
    c.send(std::span(buffer_).first(n));
  }
  void on_close(net::TcpConnection&, const net::CloseReason& reason) override {
    if (closed_ != nullptr && reason.kind == net::CloseReason::Kind::peer_closed) ++*closed_;
  }

  static constexpr std::size_t kBuffer = 4096;

 private:
  std::atomic<int>* closed_;
  std::array<std::byte, kBuffer> buffer_{};
};

std::byte pattern(std::size_t client, std::size_t i) {
  return static_cast<std::byte>((i * 131 + client * 29 + (i >> 10)) & 0xff);
}

// Sends bursts of two pieces (the second while the server handles the first)
// and reads both echoes back; sizes are random, with 1 byte and exactly the
// server's buffer among them. Returns the bytes echoed intact, in order.
std::size_t bursts(const RawClient& socket, std::size_t client, std::size_t rounds) {
  std::mt19937 random(static_cast<unsigned>(client + 1));
  std::uniform_int_distribution<std::size_t> size(1, 3 * SlowEcho::kBuffer);
  std::vector<std::byte> out;
  std::size_t done = 0;
  for (std::size_t r = 0; r < rounds; ++r) {
    std::array<std::size_t, 2> pieces{size(random), size(random)};
    if (r % 7 == 0) pieces = {SlowEcho::kBuffer, 1};
    out.resize(pieces[0] + pieces[1]);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern(client, done + i);
    socket.send(std::span(out).first(pieces[0]));
    std::this_thread::sleep_for(std::chrono::microseconds(r % 3 * 10));
    socket.send(std::span(out).subspan(pieces[0]));
    const auto back = socket.read(out.size());  // a missed edge: nothing comes, the read times out short
    for (std::size_t i = 0; i < back.size(); ++i)
      if (back[i] != out[i]) return done + i;
    if (back.size() != out.size()) return done + back.size();
    done += out.size();
  }
  return done;
}

TEST(EdgeReadWait, InputThatArrivesWhileTheLastReadIsHandledIsNeverMissed) {
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1};
  options.handle_signals = false;
  net::Server server(options);
  server.listen([](std::size_t) { return std::make_unique<SlowEcho>(); });
#if defined(VOLLEY_HAS_EDGE_READ_WAIT)
  {
    // The server's connections are on this loop: they wait without re-arming.
    asio::ip::tcp::socket probe(server.workers().loop(0), asio::ip::tcp::v4());
    ASSERT_TRUE(waits_without_rearming(probe));
  }
#endif
  constexpr std::size_t kClients = 4;
  constexpr std::size_t kRounds = 400;
  std::vector<std::size_t> echoed(kClients, 0);
  std::vector<std::size_t> expected(kClients, 0);
  {
    ServerThread running(server);
    std::vector<std::thread> clients;
    for (std::size_t i = 0; i < kClients; ++i)
      clients.emplace_back([&, i] {
        RawClient socket(server.port());
        echoed[i] = bursts(socket, i, kRounds);
      });
    for (auto& c : clients) c.join();
  }
  // What each client sent, recomputed with the same random sizes.
  for (std::size_t i = 0; i < kClients; ++i) {
    std::mt19937 random(static_cast<unsigned>(i + 1));
    std::uniform_int_distribution<std::size_t> size(1, 3 * SlowEcho::kBuffer);
    for (std::size_t r = 0; r < kRounds; ++r) {
      std::array<std::size_t, 2> pieces{size(random), size(random)};
      if (r % 7 == 0) pieces = {SlowEcho::kBuffer, 1};
      expected[i] += pieces[0] + pieces[1];
    }
    EXPECT_EQ(echoed[i], expected[i]) << "client " << i;
  }
}

// The peer's close while a connection waits on the edge: the wait completes,
// the read finds the end, and the connection closes as closed by the peer.
TEST(EdgeReadWait, APeerThatClosesWhileTheConnectionWaitsIsSeen) {
  net::ServerOptions options{.bind = "127.0.0.1", .port = 0, .threads = 1};
  options.handle_signals = false;
  net::Server server(options);
  std::atomic<int> closed{0};
  server.listen([&](std::size_t) { return std::make_unique<SlowEcho>(&closed); });
  ServerThread running(server);
  for (int round = 0; round < 20; ++round) {
    {
      RawClient socket(server.port());
      const std::array<std::byte, 3> hello{std::byte{1}, std::byte{2}, std::byte{3}};
      socket.send(hello);
      ASSERT_EQ(socket.read(hello.size()).size(), hello.size()) << round;
    }  // closed while the server's connection waits for its next bytes
    for (int i = 0; i < 2500 && closed.load() != round + 1; ++i) std::this_thread::sleep_for(2ms);
    ASSERT_EQ(closed.load(), round + 1) << "round " << round << ": the peer's close was not seen";
  }
}

// Bytes and the end, or a reset, that arrive together under one edge:
// ConnectionInputs.BytesAndTheEnd... and ...AReset... (connection_input_test.cpp), for each way of waiting.

}  // namespace
}  // namespace volley::test
