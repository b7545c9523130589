// A chat room: every message a member sends (a checked frame) goes to every
// member, the sender included, whichever worker loop each lives on. Each loop
// keeps its own members, touched only by that loop; a message crosses loops by
// post, one shared copy per message.
//
// A member cannot stall the room, and the room never skips a member's
// message: one whose queue reaches the session's high-water mark (it stopped
// reading, or reads slower than the room talks) is disconnected at once and
// counted. So every member still in the room has heard every message said
// since it joined, once, in each sender's order; one that was let go knows it
// (its connection ended) and may join again.
// Usage: chat_server [PORT [CERT KEY]] [--ws]   then `chat_client PORT NAME [CA]
// [--ws]` in a few terminals; with a certificate and key the room speaks TLS
// only; with --ws, WebSocket (wss with TLS): one binary message per chat
// message, so a browser can join too.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <boost/asio/post.hpp>

#include <volley/net/server.hpp>
#include <volley/net/session.hpp>
#include <volley/net/tls.hpp>
#include <volley/net/websocket.hpp>
#include <volley/wire/checked.hpp>

namespace net = volley::net;
using namespace std::chrono_literals;

class Room {
 public:
  explicit Room(net::Server& server) : server_(server), loops_(server.threads()) {}

  // On worker `w`'s loop.
  void join(std::size_t w, net::Session& s) { loops_[w].members.insert(&s); }
  void leave(std::size_t w, net::Session& s) { loops_[w].members.erase(&s); }

  // From any worker loop: to every member on every loop.
  void say(std::span<const std::byte> message) {
    said_.fetch_add(1, std::memory_order_relaxed);
    auto copy = std::make_shared<const std::vector<std::byte>>(message.begin(), message.end());
    for (std::size_t w = 0; w < loops_.size(); ++w)
      boost::asio::post(server_.workers().loop(w), [this, w, copy] { deliver(w, *copy); });
  }

  std::uint64_t said() const { return said_.load(); }
  std::uint64_t let_go() const { return let_go_.load(); }

 private:
  struct Loop {
    std::unordered_set<net::Session*> members;
    std::vector<net::Session*> behind;  // reused: no allocation per message
  };

  void deliver(std::size_t w, const std::vector<std::byte>& message) {
    Loop& loop = loops_[w];
    for (net::Session* member : loop.members)
      if (member->send(message) != net::SendResult::sent || member->congested()) loop.behind.push_back(member);
    // Not while iterating: the abort takes the member out of the set at once.
    for (net::Session* member : loop.behind) {
      let_go_.fetch_add(1, std::memory_order_relaxed);
      member->connection()->abort({net::CloseReason::Kind::slow_consumer, "fell behind the room"});
    }
    loop.behind.clear();
  }

  net::Server& server_;
  std::vector<Loop> loops_;  // one per worker loop
  std::atomic<std::uint64_t> said_{0}, let_go_{0};
};

class Member final : public net::SessionEvents {
 public:
  Member(Room& room, std::size_t worker) : room_(room), worker_(worker) {}
  void on_open(net::Session& s) override { room_.join(worker_, s); }
  void on_message(net::Session&, const net::Message& line) override { room_.say(line.bytes); }
  void on_close(net::Session& s, const net::CloseReason&) override { room_.leave(worker_, s); }

 private:
  Room& room_;
  std::size_t worker_;
};

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool ws = std::erase(args, "--ws") > 0;
  const auto port = static_cast<std::uint16_t>(args.size() > 0 ? std::atoi(args[0].c_str()) : 0);
  const bool tls = args.size() > 2;
  // The context outlives the server: every connection's TLS shares it.
  std::optional<boost::asio::ssl::context> context;
  net::ServerOptions server_options{.bind = "127.0.0.1", .port = port, .threads = 2};
  server_options.connection_limits.high_water = 1 << 20;  // a member this far behind is let go
  if (tls) {
    context.emplace(net::make_tls_server_context(args[1], args[2]));
    server_options.transport = [&context] { return net::make_tls_transport(*context, net::TlsRole::server); };
  }
  if (ws) {
    // WebSocket over whatever is underneath (TLS or the socket); each checked frame one message.
    net::WebSocketOptions websocket;
    websocket.message_size = volley::wire::checked::frame_size;
    server_options.transport = [websocket, tls_transport = server_options.transport] {
      return net::make_websocket_transport(net::WebSocketRole::server, websocket,
                                           tls_transport ? tls_transport() : nullptr);
    };
  }
  net::Server server(server_options);
  Room room(server);
  net::SessionOptions options;
  options.heartbeat_interval = 5s;
  server.listen([&](std::size_t worker) {
    return std::make_unique<net::Session>(net::make_checked_codec(64 * 1024), options,
                                          std::make_unique<Member>(room, worker));
  });
  server.on_ready([&] {
    std::printf("listening %s 127.0.0.1:%u\n", ws ? (tls ? "wss" : "ws") : (tls ? "tls" : "tcp"), server.port());
    std::fflush(stdout);
  });
  server.run();
  std::printf("messages said %llu, members let go for falling behind %llu\n",
              static_cast<unsigned long long>(room.said()), static_cast<unsigned long long>(room.let_go()));
}
