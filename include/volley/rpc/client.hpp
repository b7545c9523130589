#pragma once
// Request/reply client on one loop: many calls in flight on one connection,
// replies matched by sequence number (wrap-around safe: a number still in use is
// skipped), a timeout per call that fails that call only, and every pending call
// failed with a clear error when the connection goes. call() takes a callback;
// async_call() takes any Asio completion token (asio::use_awaitable for C++20
// coroutines). All members are used on the client's loop.
//
// Errors are std::error_code (ClientErrc, or the system's). async_call
// completes with Asio's boost::system::error_code, which holds the same
// std::error_code (it converts back), so a token throws or stores it as it
// does for Asio's own operations.
//
// Two ways to connect: connect() makes one connection (when it goes, pending
// calls fail and so do later ones); start() keeps the client connected
// (reconnects with backoff), holds calls made while it is away until it is
// back, and treats calls caught in flight by a drop as InFlightPolicy says.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/session.hpp>
#include <volley/net/tcp_connection.hpp>
#include <volley/rpc/frame.hpp>
#include <volley/serial/binary.hpp>

namespace volley::rpc {

enum class ClientErrc {
  timed_out = 1,
  connection_closed,
  not_connected,
  unknown_message_id,  // the server has no handler for the request's id
  bad_request,         // the server could not decode the request
  handler_failed,      // the server's handler threw
  bad_reply,           // the reply did not decode, or came with an unexpected id
  handshake_failed,    // the connection's TLS handshake failed (last_remote_error() says why)
  overloaded,          // refused: the requests queued for the server are over the high-water mark
  request_too_large,   // refused: the request is over the maximum body size
};
const std::error_category& client_category() noexcept;
inline std::error_code make_error_code(ClientErrc e) noexcept { return {static_cast<int>(e), client_category()}; }

}  // namespace volley::rpc

/// @cond TRAITS (the error-code traits: no documentation of their own)
template <>
struct std::is_error_code_enum<volley::rpc::ClientErrc> : std::true_type {};
/// @endcond

namespace volley::rpc {

// What becomes of calls already sent when their connection drops, their
// replies not yet in (the server may or may not have run them).
enum class InFlightPolicy {
  fail,    // they fail with connection_closed: each request runs at most once
  replay,  // they are sent again on the next connection, ahead of calls made since, each
           // within its own timeout: at least once, for requests that are safe to repeat
};

class RpcClient {
 public:
  using Clock = std::chrono::steady_clock;

  // `first_sequence` lets tests start near 2^32 to see the numbers wrap.
  explicit RpcClient(boost::asio::io_context& loop, std::uint32_t first_sequence = 1);
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // The session the next connect() runs: the RPC keepalive as heartbeat (both
  // ways; a silent server fails every pending call), high water (calls
  // refused with `overloaded` over it), idle timeout. Defaults: heartbeats
  // every 5 s, silence after 15 s, 4 MiB of queued requests.
  void set_session_options(const net::SessionOptions& options) { session_options_ = options; }
  const net::SessionStats* session_stats() const noexcept { return session_ ? &session_->stats() : nullptr; }

  // Connects before use (blocking, bounded by `timeout`).
  void connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout,
               std::error_code& ec);
  // Connects over `transport` (TLS: net::make_tls_transport(ctx, TlsRole::client, host)),
  // its handshake done within the same `timeout`. Runs the loop meanwhile, so
  // call it before the loop runs elsewhere.
  void connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout,
               std::unique_ptr<net::StreamTransport> transport, std::error_code& ec);
  // Keeps itself connected to options.host:options.port instead (net::ReconnectingClient:
  // backoff with jitter, options.session's heartbeats, options.make_transport for TLS).
  // Calls made while it is away, or while the connection is over its high-water
  // mark, wait in order, each within its own timeout; at most
  // options.outbox_messages calls and options.outbox_bytes of requests wait,
  // further calls are refused with `overloaded`. Returns at once.
  void start(net::ReconnectingClientOptions options, InFlightPolicy policy = InFlightPolicy::fail);
  bool connected() const noexcept;
  // Connections made and lost, attempts failed (start() only).
  const net::ReconnectingClientStats* reconnect_stats() const noexcept;
  std::size_t waiting() const noexcept { return waiting_.size(); }  // accepted, not yet sent
  // Fails every pending and waiting call with connection_closed; no reconnects
  // after it, and later calls fail at once with not_connected (until start() again).
  void close();

  template <class Reply, class Request>
  void call(std::uint32_t request_id, std::uint32_t reply_id, const Request& request, Clock::duration timeout,
            std::function<void(const std::error_code&, Reply)> done) {
    scratch_.resize(kHeaderSize + serial::encoded_size(request));
    serial::encode(request, std::span(scratch_).subspan(kHeaderSize));
    start_call(request_id, reply_id, timeout,
               [done = std::move(done)](const std::error_code& ec, std::span<const std::byte> body) {
                 Reply reply{};
                 if (ec) return done(ec, std::move(reply));
                 std::error_code decode_error;
                 if (!serial::decode(body, reply, decode_error)) return done(ClientErrc::bad_reply, std::move(reply));
                 done({}, std::move(reply));
               });
  }

  template <class Reply, class Request, class Token>
  auto async_call(std::uint32_t request_id, std::uint32_t reply_id, const Request& request, Clock::duration timeout,
                  Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, Reply)>(
        [this, request_id, reply_id, timeout](auto handler, const Request& req) {
          // Completion handlers may be move-only; std::function needs a copyable one.
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          call<Reply>(request_id, reply_id, req, timeout,
                      [shared](const std::error_code& ec, Reply reply) {
                        std::move (*shared)(boost::system::error_code(ec), std::move(reply));
                      });
        },
        token, std::cref(request));
  }

  std::size_t pending() const noexcept { return pending_.size(); }  // waiting ones included
  const std::string& last_remote_error() const noexcept { return last_remote_error_; }

  // From the connection (public for the stream handler).
  void on_frame(const Frame& frame);
  void on_closed(const std::string& reason);

 private:
  using Completion = std::function<void(const std::error_code&, std::span<const std::byte>)>;
  struct Pending {
    std::uint32_t reply_id;
    Clock::time_point deadline;
    Completion complete;
    std::uint64_t order = 0;       // when it was made: calls go out, and are replayed, in this order
    bool waiting = false;          // accepted, not on a connection (yet, or again)
    std::vector<std::byte> frame;  // kept while waiting, and while on a connection under replay
  };
  using Deadline = std::pair<Clock::time_point, std::uint32_t>;

  void start_call(std::uint32_t request_id, std::uint32_t reply_id, Clock::duration timeout, Completion complete);
  void arm_timer();
  void expire();
  void fail_all(const std::error_code& ec);
  net::Session* live_session() const noexcept;
  bool can_send() const noexcept;
  void send_waiting();
  void on_disconnected(const net::CloseReason& reason);
  void forget_waiting(Pending& p);

  boost::asio::io_context& loop_;
  net::SessionOptions session_options_;
  std::shared_ptr<net::TcpConnection> connection_;
  net::Session* session_ = nullptr;  // owned by connection_; null once it closed
  std::unordered_map<std::uint32_t, Pending> pending_;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
  boost::asio::steady_timer timer_;
  std::optional<Clock::time_point> armed_for_;
  std::uint32_t next_sequence_ = 1;
  std::uint64_t next_order_ = 0;
  std::vector<std::byte> scratch_;
  // start() only.
  std::unique_ptr<net::ReconnectingClient> reconnecting_;
  bool stopped_ = false;  // close() after start(): calls are refused with not_connected
  InFlightPolicy policy_ = InFlightPolicy::fail;
  std::map<std::uint64_t, std::uint32_t> waiting_;  // order -> sequence
  std::size_t waiting_bytes_ = 0;
  std::size_t max_waiting_ = 0;
  std::size_t max_waiting_bytes_ = 0;
  std::unique_ptr<net::SessionCodec> validator_;  // checks a request before it waits
  std::string last_remote_error_;
};

}  // namespace volley::rpc
