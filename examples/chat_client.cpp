// The chat room's client: each line typed goes to the room as "NAME: line";
// everything the room says is printed. It stays connected (heartbeats,
// reconnection with backoff; lines typed while the server is away wait in the
// outbox). End with Ctrl-D.
// Usage: chat_client PORT [NAME [CA]] [--ws]   against `chat_server PORT`; with
// a CA certificate it speaks TLS and verifies the room's certificate with it;
// with --ws it speaks WebSocket (to a room started with --ws).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/tls.hpp>
#include <volley/net/websocket.hpp>
#include <volley/wire/checked.hpp>

namespace net = volley::net;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool ws = std::erase(args, "--ws") > 0;
  if (args.empty()) {
    std::fprintf(stderr, "usage: %s PORT [NAME [CA]] [--ws]\n", argv[0]);
    return 2;
  }
  const std::string name = args.size() > 1 ? args[1] : "guest";
  boost::asio::io_context loop;
  net::ReconnectingClientOptions options;
  options.port = static_cast<std::uint16_t>(std::atoi(args[0].c_str()));
  options.make_codec = [] { return net::make_checked_codec(64 * 1024); };
  options.session.heartbeat_interval = 5s;
  std::optional<boost::asio::ssl::context> context;  // outlives the client: each connection's TLS shares it
  if (args.size() > 2) {
    context.emplace(net::make_tls_client_context(args[2], /*verify=*/true, net::TlsVersion::any));
    // Each reconnect resumes the TLS session the connection before was issued.
    options.make_transport = net::make_resuming_tls_transports(*context, options.host);
  }
  if (ws) {
    net::WebSocketOptions websocket;
    websocket.host = options.host + ":" + args[0];
    websocket.message_size = volley::wire::checked::frame_size;
    options.make_transport = [websocket, tls_transport = options.make_transport] {
      return net::make_websocket_transport(net::WebSocketRole::client, websocket,
                                           tls_transport ? tls_transport() : nullptr);
    };
  }
  net::ReconnectingClient client(
      loop, options,
      {.on_open = [] { std::printf("* joined the room\n"); },
       .on_message =
           [](const net::Message& line) {
             std::printf("%.*s\n", static_cast<int>(line.bytes.size()), reinterpret_cast<const char*>(line.bytes.data()));
             std::fflush(stdout);
           },
       .on_close = [](const net::CloseReason& r) { std::printf("* left the room: %s\n", net::to_string(r.kind)); }});
  client.start();

  // At the end of input: lines typed while the room was away wait in the
  // outbox until a connection takes them (5 s at most); then the connection
  // is flushed and closed.
  auto work = boost::asio::make_work_guard(loop);
  boost::asio::steady_timer wait(loop);
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  std::function<void()> leave_when_said = [&] {
    if (client.outbox_messages() > 0 && std::chrono::steady_clock::now() < give_up) {
      wait.expires_after(20ms);
      wait.async_wait([&](const boost::system::error_code&) { leave_when_said(); });
      return;
    }
    client.stop();
    work.reset();
  };

  // Standard input blocks, so it is read on a thread of its own; each line is
  // handed to the loop, which owns the client.
  std::thread input([&] {
    std::string line;
    while (std::getline(std::cin, line))
      boost::asio::post(loop, [&client, text = name + ": " + line] {
        if (const auto r = client.send(std::as_bytes(std::span(text)));
            r != net::SendResult::sent && r != net::SendResult::queued)
          std::fprintf(stderr, "* not sent: %s\n", net::to_string(r));
      });
    boost::asio::post(loop, [&] { leave_when_said(); });
  });
  loop.run();
  input.join();
  if (const auto dropped = client.stats().outbox_dropped; dropped > 0)
    std::fprintf(stderr, "* not sent, no connection to the room: %llu line(s)\n", static_cast<unsigned long long>(dropped));
}
