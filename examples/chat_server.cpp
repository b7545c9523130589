// A chat room: every message a client sends (a checked frame) goes to every
// connected client, the sender included, whichever worker loop each lives on.
// Each loop keeps its own members, touched only by that loop; a message
// crosses loops by post, one shared copy. A client that does not read cannot
// stall the room: once its queue is over the session's high-water mark what
// it would have got is dropped (and counted), and a client kept there for
// 5 s is disconnected as a slow consumer.
// Usage: chat_server [PORT]   then `chat_client PORT` in a few terminals.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unordered_set>
#include <vector>

#include <boost/asio/post.hpp>

#include <volley/net/server.hpp>
#include <volley/net/session.hpp>

namespace net = volley::net;
using namespace std::chrono_literals;

class Room {
 public:
  explicit Room(net::Server& server) : server_(server), members_(server.threads()) {}

  // On worker `w`'s loop.
  void join(std::size_t w, net::Session& s) { members_[w].insert(&s); }
  void leave(std::size_t w, net::Session& s) { members_[w].erase(&s); }

  // From any worker loop: to every member on every loop.
  void say(std::span<const std::byte> message) {
    said_.fetch_add(1, std::memory_order_relaxed);
    auto copy = std::make_shared<const std::vector<std::byte>>(message.begin(), message.end());
    for (std::size_t w = 0; w < members_.size(); ++w)
      boost::asio::post(server_.workers().loop(w), [this, w, copy] { deliver(w, *copy); });
  }

  std::uint64_t said() const { return said_.load(); }
  std::uint64_t dropped() const { return dropped_.load(); }

 private:
  void deliver(std::size_t w, const std::vector<std::byte>& message) {
    for (net::Session* member : members_[w])
      if (member->send(message) != net::SendResult::sent) dropped_.fetch_add(1, std::memory_order_relaxed);
  }

  net::Server& server_;
  std::vector<std::unordered_set<net::Session*>> members_;  // per worker loop
  std::atomic<std::uint64_t> said_{0}, dropped_{0};
};

class Member final : public net::SessionEvents {
 public:
  Member(Room& room, std::size_t worker) : room_(room), worker_(worker) {}
  void on_open(net::Session& s) override { room_.join(worker_, s); }
  void on_message(net::Session&, std::span<const std::byte> message) override { room_.say(message); }
  void on_close(net::Session& s, const net::CloseReason&) override { room_.leave(worker_, s); }

 private:
  Room& room_;
  std::size_t worker_;
};

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 0);
  net::Server server({.bind = "127.0.0.1", .port = port, .threads = 2});
  Room room(server);
  net::SessionOptions options;
  options.heartbeat_interval = 5s;
  options.high_water = 256 * 1024;  // a client this far behind misses messages...
  options.slow_consumer_timeout = 5s;  // ...and is let go if it stays there
  server.listen([&](std::size_t worker) {
    return std::make_unique<net::Session>(net::make_checked_codec(64 * 1024), options,
                                          std::make_unique<Member>(room, worker));
  });
  server.on_ready([&] {
    std::printf("listening tcp 127.0.0.1:%u\n", server.port());
    std::fflush(stdout);
  });
  server.run();
  std::printf("messages said %llu, deliveries dropped for clients that did not keep up %llu\n",
              static_cast<unsigned long long>(room.said()), static_cast<unsigned long long>(room.dropped()));
}
