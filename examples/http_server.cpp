// A minimal HTTP/1.1 server: GET /hello answers with a greeting, POST /echo
// answers with the request's body, GET /stats says how many requests were
// served. Keep-alive, pipelining, request size limits and the 4xx answers to
// bad requests come from http::ConnectionHandler; a handler answers through
// its Responder, now or later, from any thread.
// Usage: http_server [PORT]   then: curl -s 127.0.0.1:PORT/hello
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <volley/http/connection_handler.hpp>
#include <volley/net/server.hpp>

namespace http = volley::http;
namespace net = volley::net;

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 0);
  net::Server server({.bind = "127.0.0.1", .port = port, .threads = 2});
  std::atomic<std::uint64_t> served{0};  // both worker loops answer requests
  http::Stats stats;

  // Shared by every connection (they keep a reference): it must outlive them.
  const http::Handler handler = [&](const http::Request& request, http::Responder respond) {
    served.fetch_add(1, std::memory_order_relaxed);
    http::Response r;
    if (request.path() == "/hello" && request.method == "GET") {
      r.body = "hello from volley\n";
    } else if (request.path() == "/echo" && request.method == "POST") {
      r.content_type = "application/octet-stream";
      r.body = request.body;
    } else if (request.path() == "/stats") {
      r.body = "requests " + std::to_string(served.load()) + "\n";
    } else {
      r.status = 404;
      r.body = "try /hello, /echo (POST) or /stats\n";
    }
    respond(std::move(r));
  };
  server.listen([&](std::size_t /*worker*/) { return std::make_unique<http::ConnectionHandler>(handler, http::Limits{}, stats); });
  server.on_ready([&] {
    std::printf("listening tcp 127.0.0.1:%u\n", server.port());
    std::fflush(stdout);
  });
  server.run();
  std::printf("requests served %llu, bad requests refused %llu\n", static_cast<unsigned long long>(served.load()),
              static_cast<unsigned long long>(stats.bad_requests.load()));
}
