#pragma once
// A client of its own on a LoopPool: connections that each say a line to an
// echo server, close once it has come back, and leave the loop with nothing
// to do. For tests that a loop whose connections wait in some special way
// (spinning reads, an io_uring ring) still returns once they have all closed.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include <volley/net/loop_pool.hpp>
#include <volley/net/tcp_connect.hpp>
#include <volley/net/tcp_connection.hpp>

namespace volley::test {

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

// Opens `count` SayAndClose connections to the echo server at `port` on
// `loops`' first loop, starts and releases the loops, and expects them to
// return within 10 s with every echo matched and every connection closed.
inline void expect_loop_returns_after_say_and_close(net::LoopPool& loops, std::uint16_t port, int count) {
  using namespace std::chrono_literals;
  std::atomic<int> matched{0};
  std::atomic<int> failed{0};
  std::vector<std::shared_ptr<net::TcpConnection>> connections(static_cast<std::size_t>(count));
  boost::asio::io_context& loop = loops.loop(0);
  boost::asio::post(loop, [&] {
    for (int i = 0; i < count; ++i) {
      std::error_code ec;
      auto socket = net::connect_tcp(loop, "127.0.0.1", port, 5s, ec);
      if (ec) {
        failed.fetch_add(1);
        continue;
      }
      auto& connection = connections[static_cast<std::size_t>(i)];
      connection = std::make_shared<net::TcpConnection>(
          std::move(socket), std::make_unique<SayAndClose>("hello from connection " + std::to_string(i), matched));
      connection->start();
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
  EXPECT_EQ(matched.load(), count);
  for (const auto& c : connections) EXPECT_TRUE(c == nullptr || c->closed());
}

}  // namespace volley::test
