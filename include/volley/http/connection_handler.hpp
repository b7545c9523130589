#pragma once
// HTTP/1.1 on a TcpConnection: requests are parsed as they arrive
// (keep-alive, pipelining, chunked bodies), each handed to the handler with a
// Responder, and answered in order: the next pipelined request waits until
// the current one is answered, and the connection reads no more meanwhile, so
// a client pipelining without reading holds at most one request in memory.
//
// While the connection's output is at high water (ConnectionLimits) no
// buffered request is answered either: a client that pipelines and never
// reads holds one high water of answers, and meets the slow-consumer deadline;
// the rest are answered once on_backpressure says the output drained.
//
// Bad input gets its status and the connection closes after it: malformed
// syntax 400, a header block over the limit 431, a body over the limit 413,
// an unsupported transfer encoding 501, a request not whole within its
// deadline 408. Nothing of one connection touches another.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <boost/asio/steady_timer.hpp>

#include <volley/http/message.hpp>
#include <volley/net/tcp_connection.hpp>

namespace volley::http {

struct Limits {
  std::size_t header_bytes = 8 * 1024;  // request line and headers
  std::size_t body_bytes = 64 * 1024;
  // A request must arrive whole (headers and body) within this of its first
  // byte; a byte now and then does not extend it (0: no deadline).
  std::chrono::milliseconds request_timeout{5000};
};

// Counted across every connection of a server (relaxed atomics: a few per request).
struct Stats {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> bad_requests{0};  // answered 4xx/5xx by the parser, connection closed
  std::atomic<std::uint64_t> timed_out{0};     // of those, requests not whole within request_timeout (408)
};

class ConnectionHandler;

// Answers one request, once, from any thread: the response is posted to the
// connection's loop. A responder dropped without an answer leaves its
// connection waiting (its idle timeout, if any, ends it); one whose
// connection closed meanwhile does nothing.
class Responder {
 public:
  Responder(std::weak_ptr<net::TcpConnection> connection, ConnectionHandler* handler, bool head)
      : connection_(std::move(connection)), handler_(handler), head_(head) {}
  void operator()(Response response);

 private:
  std::weak_ptr<net::TcpConnection> connection_;
  ConnectionHandler* handler_;
  bool head_;
};

using Handler = std::function<void(const Request&, Responder)>;

class ConnectionHandler final : public net::StreamHandler {
 public:
  // `handler` and `stats` must outlive the connection.
  ConnectionHandler(const Handler& handler, Limits limits, Stats& stats);
  ~ConnectionHandler() override;

  std::span<std::byte> read_buffer() override;
  void on_data(net::TcpConnection& connection, std::size_t n) override;
  void on_backpressure(net::TcpConnection& connection, bool full) override;
  // The server is draining: the request under way (if any) is answered with
  // Connection: close and the connection closes after it; an idle one closes now.
  void on_drain(net::TcpConnection& connection) override;
  void on_close(net::TcpConnection& connection, const net::CloseReason& reason) override;

  // On the connection's loop (Responder posts here).
  void respond(net::TcpConnection& connection, const Response& response, bool head);

  // Since when the connection has been of no use to its peer: when it opened
  // or last answered (steady clock); the far future while a request is with
  // the handler. Readable from any thread: a server that is full lets go of
  // the connection with the earliest (http::MetricsEndpoint).
  std::chrono::steady_clock::time_point idle_since() const noexcept {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(idle_since_.load(std::memory_order_relaxed)));
  }

 private:
  struct Parser;
  void parse_buffered(net::TcpConnection& connection);
  // Answers buffered requests and reads on, unless the output is at high water.
  void serve_buffered(net::TcpConnection& connection);
  void arm_request_deadline(net::TcpConnection& connection);
  void refuse(net::TcpConnection& connection, unsigned status, std::string_view why);
  void set_idle_since(std::chrono::steady_clock::time_point t) noexcept {
    idle_since_.store(t.time_since_epoch().count(), std::memory_order_relaxed);
  }

  const Handler& handler_;
  Limits limits_;
  Stats& stats_;
  std::unique_ptr<Parser> parser_;
  std::optional<boost::asio::steady_timer> request_deadline_;  // armed while a request arrives in pieces
  std::atomic<std::chrono::steady_clock::rep> idle_since_;
  bool waiting_ = false;     // a request is with the handler, unanswered
  bool keep_alive_ = true;   // what the request being answered asked for
  bool finished_ = false;    // closed, or closing after a response
  bool draining_ = false;    // the server is draining: no request after the one under way
};

}  // namespace volley::http
