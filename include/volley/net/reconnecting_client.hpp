#pragma once
// A client session that keeps itself connected: it reconnects with exponential
// backoff and jitter, to one server or to the next of several
// (server_picker.hpp), and keeps what it is given while it cannot send (the
// peer is away, or the connection is over its high-water mark) in a bounded
// outbox, delivered in order once it can, on whichever server it reaches. A
// server that says goodbye (it is draining for a restart) is left at once,
// gracefully: what was sent is flushed and its replies still arrive while the
// server closes (TcpConnection::kLingerTimeout at most), new sends wait in
// the outbox, and the next connection is made without a backoff. A send it
// cannot keep is refused and says so; nothing it accepted is dropped
// silently. Lives on one loop: every member function must be called on that
// loop's thread.
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
#include <volley/net/server_picker.hpp>
#include <volley/net/session.hpp>
#include <volley/net/unix_socket.hpp>

namespace volley::net {

struct ReconnectingClientOptions {
  // One server: an IP address, a host name, or a Unix socket
  // ("unix:/run/svc.sock", unix_socket.hpp; `port` is then not used).
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  // Several servers instead of host and port: "HOST:PORT" ("10.0.0.7:9000",
  // "[::1]:9000", "svc.internal:9000") or a Unix address. A host name (here
  // or in `host`) stands for every address it resolves to, and is resolved
  // again, without blocking the loop, while the client waits to reconnect:
  // DNS-based discovery. Tried as server_policy says (server_picker.hpp).
  std::vector<std::string> servers;
  ServerPolicy server_policy = ServerPolicy::first;
  // After a failover, connected to another server than its own (the first
  // server, or round_robin's jitter_seed % servers), the client checks this
  // long after, and every this long again, whether its own takes connections
  // again (a bare connect, closed at once); when it does, it leaves for it
  // gracefully, as after a goodbye, so clients spread again once a server is
  // back. 0: they stay where they are until that connection ends.
  std::chrono::milliseconds return_home_after{0};
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
  // Seeds the backoff's jitter, and picks round_robin's first server
  // (jitter_seed % servers): clients given consecutive seeds spread evenly.
  std::uint64_t jitter_seed = 0x5eed;
};

// One server address the client tried.
struct ServerStats {
  std::string address;  // "192.0.2.7:9000", "[::1]:9000", "unix:/run/svc.sock"
  std::uint64_t connects = 0;
  std::uint64_t failed_attempts = 0;
};

struct ReconnectingClientStats {
  std::uint64_t connects = 0;
  // Connections opened on another address than the connection before them.
  std::uint64_t failovers = 0;
  // Connects whose TLS handshake resumed the session an earlier one was issued.
  std::uint64_t resumed_connects = 0;
  std::uint64_t failed_attempts = 0;
  std::uint64_t disconnects = 0;
  // Of those, connections left because the server said goodbye (it was
  // draining), and those left to go back to the client's own server (return_home_after).
  std::uint64_t goodbyes = 0;
  std::uint64_t returns = 0;
  std::uint64_t outbox_refusals = 0;
  // Bytes accepted onto a connection that were still unsent when it died.
  std::uint64_t unsent_bytes_lost = 0;
  // Messages still waiting in the outbox when stop() was called (no
  // connection could take them then): never sent.
  std::uint64_t outbox_dropped = 0;
  // Every address tried, in the order first tried.
  std::vector<ServerStats> servers;
};

class ReconnectingClient final : private SessionEvents {
 public:
  using Clock = std::chrono::steady_clock;
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
    // An attempt failed before the connection opened (server() says where):
    // the connect's error, std::errc::timed_out, std::errc::connection_refused
    // (the socket connected to itself: nothing listens on the port), the
    // handshake's CloseReason::error, or the resolver's (no address at all).
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

  // Connected, and not leaving a server that said goodbye.
  bool connected() const noexcept { return session_ != nullptr && session_->open() && leaving_ == Leaving::no; }
  std::size_t outbox_messages() const noexcept { return outbox_.size(); }
  std::size_t outbox_bytes() const noexcept { return outbox_bytes_; }
  const ReconnectingClientStats& stats() const noexcept { return stats_; }
  // The address of the connection (or the attempt) now or last; empty before the first.
  const std::string& server() const noexcept { return server_; }
  // The live session, or null while disconnected (or leaving: see connected()).
  Session* session() noexcept { return leaving_ == Leaving::no ? session_ : nullptr; }

 private:
  // Where an attempt goes: a Unix socket, or a TCP endpoint.
  struct Target {
    std::string address;  // for reports (ServerStats::address)
    std::optional<UnixAddress> unix_socket;  // not `unix`: GNU C++ defines it as a macro
    boost::asio::ip::tcp::endpoint endpoint;
  };
  // A server as given: a literal address is its own target; a name is resolved.
  struct Configured {
    std::string host;
    std::uint16_t port = 0;
    std::optional<Target> literal;
  };
  static Configured configure(const std::string& host, std::uint16_t port);
  // The servers' addresses, in the order given: the literal ones, and what
  // the resolver said for each name (`resolved`, one list per configured_).
  std::vector<Target> targets_from(const std::vector<std::vector<Target>>& resolved) const;
  // A new list of addresses (unless it is the same, or empty): a fresh picker.
  void use_targets(std::vector<Target> targets);
  // Resolves the names again while the client waits, one after another from
  // configured_[i]; the result is used before the next attempt.
  void resolve_again();
  void resolve_from(std::size_t i, std::shared_ptr<std::vector<std::vector<Target>>> resolved);
  ServerStats& stats_of(const std::string& address);
  void connect();
  void on_connect(const boost::system::error_code& ec);
  void attempt_failed(const std::error_code& why);
  // Waits as the picker said, then connects. `why`: a failed attempt's error.
  void schedule_reconnect(ServerPicker::Next next, const std::error_code& why);
  double draw() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }
  void drain_outbox();
  // Why the open connection is being closed by this end, before a reconnect at once.
  enum class Leaving { no, goodbye, home };
  void leave(Leaving why, CloseReason reason);
  // return_home_after: waits, then probes the client's own server.
  void check_home();
  void probe_home();

  // SessionEvents
  void on_open(Session& session) override;
  void on_message(Session& session, const Message& message) override;
  void on_backpressure(Session& session, bool congested) override;
  void on_goodbye(Session& session) override;
  void on_close(Session& session, const CloseReason& reason) override;

  boost::asio::io_context& loop_;
  ReconnectingClientOptions options_;
  Callbacks callbacks_;
  std::unique_ptr<SessionCodec> validator_;  // frames nothing; checks payloads that go to the outbox
  std::mt19937_64 rng_;
  std::vector<Configured> configured_;  // options' servers, or host and port
  std::vector<Target> targets_;
  std::optional<std::vector<Target>> pending_targets_;  // resolved again, not yet used
  std::optional<ServerPicker> picker_;
  std::size_t target_ = 0;             // the attempt's, or the connection's, in targets_
  std::string server_;                 // its address
  std::string last_opened_;            // the address the last connection opened on
  std::error_code resolve_error_;      // why targets_ is empty
  std::shared_ptr<boost::asio::ip::tcp::resolver> resolver_;  // while resolving again
  std::unique_ptr<boost::asio::ip::tcp::socket> socket_;  // while connecting
  boost::asio::steady_timer retry_timer_;
  boost::asio::steady_timer connect_timer_;
  bool connect_timed_out_ = false;  // the current attempt's timeout closed its socket
  std::shared_ptr<TcpConnection> connection_;
  Session* session_ = nullptr;
  bool session_opened_ = false;  // the current connection's session opened (after any handshake)
  Leaving leaving_ = Leaving::no;  // closing to go elsewhere: sends wait for the next connection
  boost::asio::steady_timer home_timer_;  // return_home_after's period, then the probe's deadline
  std::unique_ptr<boost::asio::ip::tcp::socket> probe_;  // a connect to the client's own server
  std::deque<std::vector<std::byte>> outbox_;
  std::size_t outbox_bytes_ = 0;
  ReconnectingClientStats stats_;
  bool stopping_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace volley::net
