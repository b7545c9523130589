#pragma once
// A client session that keeps itself connected: it reconnects with exponential
// backoff and jitter, and keeps what it is given while it cannot send (the
// peer is away, or the connection is over its high-water mark) in a bounded
// outbox, delivered in order once it can. A send it cannot keep is refused and
// says so; nothing it accepted is dropped silently. Lives on one loop: every
// member function must be called on that loop's thread.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/backoff.hpp>
#include <volley/net/session.hpp>
#include <volley/net/unix_socket.hpp>

namespace volley::net {

struct ReconnectingClientOptions {
  // An IP address, a host name (resolved once, at start()), or a Unix socket
  // ("unix:/run/svc.sock", unix_socket.hpp; `port` is then not used).
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::chrono::milliseconds connect_timeout{2000};
  BackoffOptions backoff{};
  std::size_t outbox_messages = 4096;
  std::size_t outbox_bytes = 4 * 1024 * 1024;
  SessionOptions session{};
  // Each connection's bounds (its output's high water: sends are refused
  // there). The handshake deadline is connect_timeout's.
  ConnectionLimits connection_limits{};
  std::function<std::unique_ptr<SessionCodec>()> make_codec;
  // Each connection's transport (TLS: make_resuming_tls_transports(ctx, host),
  // whose connections resume the session the one before was issued); empty
  // for plain TCP. Its handshake counts against connect_timeout, and a failed
  // one is a failed attempt.
  std::function<std::unique_ptr<StreamTransport>()> make_transport;
  std::uint64_t jitter_seed = 0x5eed;
};

struct ReconnectingClientStats {
  std::uint64_t connects = 0;
  // Connects whose TLS handshake resumed the session an earlier one was issued.
  std::uint64_t resumed_connects = 0;
  std::uint64_t failed_attempts = 0;
  std::uint64_t disconnects = 0;
  std::uint64_t outbox_refusals = 0;
  // Bytes accepted onto a connection that were still unsent when it died.
  std::uint64_t unsent_bytes_lost = 0;
  // Messages still waiting in the outbox when stop() was called (no
  // connection could take them then): never sent.
  std::uint64_t outbox_dropped = 0;
};

class ReconnectingClient final : private SessionEvents {
 public:
  // The session's events (SessionEvents' names, one vocabulary), plus failed
  // attempts. Each may be left out (designated initializers: set only those you need).
  struct Callbacks {
    // A connection opened (after its transport's handshake); the outbox drains next.
    std::function<void()> on_open{};
    std::function<void(const Message&)> on_message{};
    // The connection went over its high-water mark (true), or drained (false,
    // after the outbox had its turn): for a user that keeps messages of its own waiting.
    std::function<void(bool congested)> on_backpressure{};
    // An open connection closed; a reconnect follows unless stop() was called.
    std::function<void(const CloseReason&)> on_close{};
    // An attempt failed before the connection opened: the connect's error,
    // std::errc::timed_out, std::errc::connection_refused (the socket connected
    // to itself: nothing listens on the port), or the handshake's CloseReason::error.
    // The next attempt comes after `delay`.
    std::function<void(const std::error_code& error, std::chrono::milliseconds delay)> on_connect_failed{};
  };

  ReconnectingClient(boost::asio::io_context& loop, ReconnectingClientOptions options, Callbacks callbacks);
  ~ReconnectingClient() override;
  ReconnectingClient(const ReconnectingClient&) = delete;
  ReconnectingClient& operator=(const ReconnectingClient&) = delete;

  void start();
  // sent, queued (outbox), or a refusal: outbox_full, invalid, closed (after stop()).
  SendResult send(std::span<const std::byte> payload);
  // No more reconnects. An open connection takes what the outbox holds (as
  // far as its high-water mark allows), then is flushed and closed; a
  // connection still in its transport's handshake is closed at once. What
  // stays in the outbox is dropped and counted (stats().outbox_dropped): to
  // send it, wait for outbox_messages() to reach 0 before stopping.
  void stop();

  bool connected() const noexcept { return session_ != nullptr && session_->open(); }
  std::size_t outbox_messages() const noexcept { return outbox_.size(); }
  std::size_t outbox_bytes() const noexcept { return outbox_bytes_; }
  const ReconnectingClientStats& stats() const noexcept { return stats_; }
  // The live session, or null while disconnected.
  Session* session() noexcept { return session_; }

 private:
  void connect();
  void on_connect(const boost::system::error_code& ec);
  // After a failed attempt (`why` set) or a lost connection (`why` empty).
  void schedule_reconnect(const std::error_code& why);
  void drain_outbox();

  // SessionEvents
  void on_open(Session& session) override;
  void on_message(Session& session, const Message& message) override;
  void on_backpressure(Session& session, bool congested) override;
  void on_close(Session& session, const CloseReason& reason) override;

  boost::asio::io_context& loop_;
  ReconnectingClientOptions options_;
  Callbacks callbacks_;
  std::unique_ptr<SessionCodec> validator_;  // frames nothing; checks payloads that go to the outbox
  Backoff backoff_;
  std::mt19937_64 rng_;
  boost::asio::ip::tcp::endpoint endpoint_;
  std::optional<UnixAddress> unix_;  // connects there instead of endpoint_
  std::unique_ptr<boost::asio::ip::tcp::socket> socket_;  // while connecting
  boost::asio::steady_timer retry_timer_;
  boost::asio::steady_timer connect_timer_;
  bool connect_timed_out_ = false;  // the current attempt's timeout closed its socket
  std::shared_ptr<TcpConnection> connection_;
  Session* session_ = nullptr;
  bool session_opened_ = false;  // the current connection's session opened (after any handshake)
  std::deque<std::vector<std::byte>> outbox_;
  std::size_t outbox_bytes_ = 0;
  ReconnectingClientStats stats_;
  bool stopping_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace volley::net
