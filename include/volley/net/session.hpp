#pragma once
// A message session on one TCP connection, for any framing (SessionCodec):
// heartbeats and the liveness check, an idle timeout on messages, and a
// policy for protocol errors. It is the connection's StreamHandler and lives
// on the connection's loop. The timing decisions are session::SessionPolicy's
// (their exact rules are written there); the session feeds it events and runs
// one timer for it. The bounds on bytes (queued output, slow consumers, idle
// bytes) are the connection's (ConnectionLimits): over its high water the
// session refuses sends and passes the connection's backpressure event on.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <system_error>

#include <boost/asio/steady_timer.hpp>

#include <volley/net/session_codec.hpp>
#include <volley/net/tcp_connection.hpp>
#include <volley/session/policy.hpp>

namespace volley::net {

struct SessionOptions {
  enum class OnProtocolError { drop, close };

  // A heartbeat goes out when nothing else was sent for half an interval to an
  // interval; a peer silent (no bytes at all) for interval x misses is gone.
  // Zero turns both off.
  std::chrono::milliseconds heartbeat_interval{5000};
  unsigned heartbeat_misses = 3;
  // No message (heartbeats do not count) either way for this long (up to a
  // quarter more) closes the session. Zero: never.
  std::chrono::milliseconds idle_timeout{0};
  OnProtocolError on_protocol_error = OnProtocolError::drop;
};

enum class SendResult {
  sent,          // queued on the connection
  high_water,    // refused: the connection's output is full (ConnectionLimits::high_water)
  closed,        // refused: the session is closing or closed
  invalid,       // refused: the payload cannot be framed (too long, malformed)
  queued,        // (ReconnectingClient) kept in the outbox for the next connection
  outbox_full,   // (ReconnectingClient) refused: disconnected and the outbox is full
};
const char* to_string(SendResult r) noexcept;

struct SessionStats {
  std::uint64_t messages_in = 0;
  std::uint64_t messages_out = 0;
  std::uint64_t heartbeats_in = 0;
  std::uint64_t heartbeats_out = 0;
  std::uint64_t goodbyes_in = 0;   // the peer said it is going away (draining)
  std::uint64_t goodbyes_out = 0;  // this end said so (say_goodbye)
  std::uint64_t protocol_errors = 0;
  std::uint64_t refused_sends = 0;
  std::uint64_t high_water_events = 0;

  SessionStats& operator+=(const SessionStats& o) noexcept {
    messages_in += o.messages_in;
    messages_out += o.messages_out;
    heartbeats_in += o.heartbeats_in;
    heartbeats_out += o.heartbeats_out;
    goodbyes_in += o.goodbyes_in;
    goodbyes_out += o.goodbyes_out;
    protocol_errors += o.protocol_errors;
    refused_sends += o.refused_sends;
    high_water_events += o.high_water_events;
    return *this;
  }
};

class Session;

class SessionEvents {
 public:
  virtual ~SessionEvents() = default;
  virtual void on_open(Session& /*session*/) {}
  // A message, with the id and body its codec read (net::Message); its bytes
  // are valid only during the call.
  virtual void on_message(Session& session, const Message& message) = 0;
  // The peer's heartbeat arrived (counted, never a message): for monitors of liveness.
  virtual void on_heartbeat(Session& /*session*/) {}
  // The peer said goodbye: it is draining (a server about to restart) and
  // asks this end to finish what it has in flight, close, and reconnect,
  // elsewhere. The peer goes on serving meanwhile, until its deadline. The
  // default closes gracefully at once (Kind::peer_going_away: queued
  // messages are flushed first, and replies to them still arrive until the
  // peer closes, TcpConnection::kLingerTimeout at most), as
  // ReconnectingClient and rpc::RpcClient do before they reconnect.
  virtual void on_goodbye(Session& session);
  // A bad frame was counted; `closing` says whether the policy closes the
  // session. `frame`: its bytes where the framing can delimit them (Inbound::message).
  virtual void on_protocol_error(Session& /*session*/, const std::error_code& /*error*/,
                                 std::span<const std::byte> /*frame*/, bool /*closing*/) {}
  // `bytes` more of the queued output reached the kernel (for senders that
  // lend their buffers to send_framed() and must know when they are free).
  virtual void on_written(Session& /*session*/, std::size_t /*bytes*/) {}
  // congested: the connection's output crossed high water (sends are refused
  // until it drains); false: drained to low water (ConnectionLimits).
  virtual void on_backpressure(Session& /*session*/, bool /*congested*/) {}
  // Once, at the end. Without on_open before it when the connection's
  // transport (TLS) failed its handshake (reason.kind handshake_failed).
  virtual void on_close(Session& /*session*/, const CloseReason& /*reason*/) {}
};

class Session final : public StreamHandler {
 public:
  using Clock = std::chrono::steady_clock;

  // `events` must outlive the session unless the session owns it (second form).
  Session(std::unique_ptr<SessionCodec> codec, const SessionOptions& options, SessionEvents& events);
  Session(std::unique_ptr<SessionCodec> codec, const SessionOptions& options, std::unique_ptr<SessionEvents> events);

  SendResult send(std::span<const std::byte> payload);
  // Sends back out a payload that on_message() is handing over right now (an
  // echo, a message relayed as it came) without copying it into the write
  // queue: only its header is written (a checked frame's XOR is computed over
  // the payload where it lies, still in cache), and the payload leaves from
  // the input buffer. Reading from the socket pauses until it has left, since
  // that buffer must not move under it (frames already read are still
  // decoded). Pays off for large payloads, where the copy into the write queue
  // costs more than the pause (the ping-pong server uses it from 64 KiB).
  SendResult send_received(std::span<const std::byte> payload);
  // Bytes the caller framed already (whole frames of this session's framing, e.g.
  // a pre-encoded block), queued as they are and counted as `messages` messages;
  // nothing checks them. `lent`: not copied, the bytes must stay as they are
  // until on_written() has reported them all.
  enum class Buffer { copy, lent };
  SendResult send_framed(std::span<const std::byte> frames, std::size_t messages, Buffer buffer = Buffer::copy);
  // Graceful: queued messages are flushed first.
  void close(CloseReason reason = {CloseReason::Kind::local_close, {}});
  // Tells the peer this end is going away and it should go elsewhere once
  // what it has in flight is done (SessionEvents::on_goodbye there): the
  // framing's goodbye frame, queued after what is queued already, the
  // session going on serving. Over a transport that closes in band
  // (WebSocket) it is the close itself, code 1001. Returns false where the
  // framing has no goodbye (nothing is sent then) or the session is closing.
  bool say_goodbye();

  // Stop decoding input (the frames already read wait in the decoder) and
  // reading from the socket, e.g. while the replies they would cause cannot be
  // queued; resume_input() picks up where it stopped.
  void pause_input();
  void resume_input();

  bool open() const noexcept { return connection_ != nullptr && connection_->open(); }
  bool congested() const noexcept { return connection_ != nullptr && connection_->output_full(); }
  // Bytes of an unfinished frame read so far (non-zero when the peer left mid-frame).
  std::size_t unfinished_bytes() const { return codec_->buffered(); }
  std::size_t queued_bytes() const noexcept { return connection_ ? connection_->queued_bytes() : 0; }
  const SessionStats& stats() const noexcept { return stats_; }
  const SessionOptions& options() const noexcept { return options_; }
  TcpConnection* connection() noexcept { return connection_; }
  SessionEvents& events() noexcept { return *events_; }

  // StreamHandler
  void on_open(TcpConnection& connection) override;
  std::span<std::byte> read_buffer() override { return codec_->prepare(); }
  void on_data(TcpConnection& connection, std::size_t n) override;
  void on_written(TcpConnection& connection, std::size_t bytes) override;
  void on_backpressure(TcpConnection& connection, bool full) override;
  // The server is draining: say_goodbye(), or a graceful close where the framing has no goodbye.
  void on_drain(TcpConnection& connection) override;
  void on_close(TcpConnection& connection, const CloseReason& reason) override;

 private:
  SendResult refuse(SendResult why) noexcept;  // counts it
  SendResult can_send() const noexcept;        // sent: yes; else why not
  SendResult queued(std::size_t messages);     // bookkeeping after a send
  void decode_buffered();
  void deliver(const Message& message);
  // Tells the policy whether the session hears its peer (it does not while
  // input is paused, held for a lent payload, or stopped for full output).
  void update_hearing();
  // Sleeps until the policy's next deadline (only ever moved earlier here: a
  // timer that fires early polls, finds nothing due and sleeps again).
  void arm_timer();
  void on_timer();

  std::unique_ptr<SessionCodec> codec_;
  SessionOptions options_;
  std::unique_ptr<SessionEvents> owned_events_;
  SessionEvents* events_;
  TcpConnection* connection_ = nullptr;
  SessionStats stats_;

  session::SessionPolicy policy_;
  std::optional<boost::asio::steady_timer> timer_;
  Clock::time_point timer_at_ = Clock::time_point::max();
  std::size_t heartbeat_bytes_queued_ = 0;  // not yet reported written
  std::uint64_t keepalives_heard_ = 0;      // the connection's keepalives_heard() at the last timer
  // send_received(): every byte the connection has written, and the count at
  // which the last lent payload will have left (reading waits until then).
  std::uint64_t bytes_written_ = 0;
  std::uint64_t lent_until_ = 0;
  bool holding_input_ = false;
  bool input_paused_ = false;
};

}  // namespace volley::net
