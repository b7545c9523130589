#pragma once
// One TCP connection on one loop: a read loop that hands bytes to a
// StreamHandler (the protocol), and a WriteQueue flushed by gather writes,
// straight on the socket or through a StreamTransport (TLS) that runs its
// handshake first. Every member function must be called on the connection's loop.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/net/detail/write_queue.hpp>
#include <volley/net/stream_transport.hpp>

namespace volley::net {

struct CloseReason {
  enum class Kind {
    peer_closed,
    io_error,
    protocol_error,
    local_close,
    shutdown,
    heartbeat_timeout,
    idle_timeout,
    slow_consumer,
    handshake_failed,  // the transport's handshake failed or missed its deadline
    peer_going_away,   // the peer said goodbye (it is draining), and this end left
  };
  static constexpr std::size_t kKinds = static_cast<std::size_t>(Kind::peer_going_away) + 1;
  Kind kind = Kind::local_close;
  std::string detail;
  // The error behind an io_error, a protocol_error or a failed handshake
  // (std::errc::timed_out for a missed handshake deadline); none for the other kinds.
  std::error_code error{};
  // Bytes accepted for sending that never reached the kernel (set when the connection finishes).
  std::size_t unsent_bytes = 0;
};
const char* to_string(CloseReason::Kind kind) noexcept;

class TcpConnection;
namespace detail {
class ConnectionInput;
}

// The protocol side of a connection.
class StreamHandler {
 public:
  virtual ~StreamHandler() = default;
  // Where the next read lands; the handler owns that memory.
  virtual std::span<std::byte> read_buffer() = 0;
  // The connection started (after the transport's handshake, if any); the
  // handler may keep a pointer to it until on_close.
  virtual void on_open(TcpConnection& /*connection*/) {}
  // `n` bytes landed at the start of the last read_buffer(). Sends made here are
  // held back and flushed together when it returns.
  virtual void on_data(TcpConnection& connection, std::size_t n) = 0;
  // A gather write finished: `bytes` more of what was queued reached the kernel.
  virtual void on_written(TcpConnection& /*connection*/, std::size_t /*bytes*/) {}
  // The queued output crossed the connection's high water (`full`: hold back
  // what can wait; a session refuses sends) or drained to low water again
  // (ConnectionLimits). Called from inside the send that crossed it, and
  // before on_written for the write that drained it.
  virtual void on_backpressure(TcpConnection& /*connection*/, bool /*full*/) {}
  // The server is draining (Server::drain): tell the peer to finish and go
  // elsewhere, where the protocol can (a Session's goodbye, HTTP's
  // Connection: close), and go on serving it until it leaves or the server's
  // deadline. The default closes gracefully now (Kind::shutdown).
  virtual void on_drain(TcpConnection& connection);
  // Called exactly once, when the connection is finished; without on_open
  // before it when the transport's handshake failed (Kind::handshake_failed).
  virtual void on_close(TcpConnection& connection, const CloseReason& reason) = 0;
};

// What a connection holds for a peer, whatever the protocol above it. Every
// bound on a connection lives here, and only the connection enforces it.
// - Output: at `high_water` queued bytes the output is full, and the handler
//   hears on_backpressure(true); at `low_water` (0: a quarter of high water)
//   it hears on_backpressure(false). With `stop_reading_when_full` the
//   connection also reads nothing while full, so a peer that sends without
//   reading the answers backs up into its own buffers (servers: ServerOptions
//   turns it on; a client that also stopped would wait on its server for
//   ever). A peer that keeps the output full for `slow_consumer_timeout` is
//   disconnected (aborted, Kind::slow_consumer). high_water 0: no bound.
// - Idleness: a connection with no byte read or written for `idle_timeout` is
//   closed gracefully (0: never). (A session's idle timeout counts messages.)
// - Handshake: a transport's handshake not done within `handshake_timeout`
//   ends the connection (handshake_failed; 0: no deadline).
struct ConnectionLimits {
  std::size_t high_water = 4 << 20;                    // 0: no bound
  std::size_t low_water = 0;                           // 0: a quarter of high_water
  bool stop_reading_when_full = false;
  std::chrono::milliseconds slow_consumer_timeout{0};  // 0: never disconnect
  std::chrono::milliseconds idle_timeout{0};           // 0: never
  std::chrono::milliseconds handshake_timeout{0};      // 0: no deadline
};

class TcpConnection : public std::enable_shared_from_this<TcpConnection> {
 public:
  // How long a graceful close waits for the peer's end of stream after flushing.
  static constexpr std::chrono::milliseconds kLingerTimeout{2000};

  // `transport` null: the bytes go straight to the socket.
  TcpConnection(boost::asio::ip::tcp::socket socket, std::unique_ptr<StreamHandler> handler,
                ConnectionLimits limits = {}, std::unique_ptr<StreamTransport> transport = nullptr);
  ~TcpConnection();
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  void start();

  // Queue bytes for the peer (copied, or borrowed: see WriteQueue; a copy
  // goes straight into a shared-memory ring as send_in_place does). Returns
  // false once the connection is closing: nothing is queued then.
  bool send(std::span<const std::byte> bytes);
  bool send_borrowed(std::span<const std::byte> bytes);
  // A header and a body copied back to back, so they leave in one write.
  bool send(std::span<const std::byte> head, std::span<const std::byte> body);
  // A header copied and a body borrowed (kept alive and unchanged by the caller
  // until on_written has accounted for it), leaving in the same gather write.
  bool send_borrowed_body(std::span<const std::byte> head, std::span<const std::byte> body);
  // Builds a message in place, with no copy of its own: in the write queue, or
  // straight in a shared-memory ring when nothing is queued before it.
  // `fill(std::span<std::byte> room)` gets `max_size` bytes, writes the message
  // at their start and returns how many it used (0: nothing is sent).
  template <class Fill>
  bool send_in_place(std::size_t max_size, Fill&& fill) {
    if (!accepting_sends()) return false;
    const std::span<std::byte> room = reserve_send(max_size);
    commit_send(room.size(), fill(room));
    return true;
  }

  // Graceful: refuse further sends, flush what is queued, send FIN, keep reading
  // until the peer's FIN (bounded by kLingerTimeout), then close.
  void close(CloseReason reason);
  // Immediate: drop what is queued and close the socket.
  void abort(CloseReason reason);
  // The server is draining: the handler tells the peer (StreamHandler::on_drain)
  // and may go on serving it. A connection still in its handshake just ends.
  void drain();
  // A transport that closes in band (WebSocket) first tells the peer why, in
  // both: close() after what is queued, abort() as far as the socket takes it.

  // A keepalive of the transport's own (a WebSocket ping, answered by any
  // browser): sent, or false where the transport has none (plain TCP, TLS).
  bool send_keepalive();
  // Answers to those keepalives heard so far (pongs).
  std::uint64_t keepalives_heard() const noexcept { return transport_ ? transport_->keepalives_heard() : 0; }

  // While a Corked lives, sends are queued but not written; its end writes them
  // all in one gather write. on_data, on_written and on_open run corked; code
  // that sends many messages from elsewhere (a timer, another loop's post)
  // should cork too, or each message costs a system call.
  class Corked {
   public:
    explicit Corked(TcpConnection& c) : c_(c) { ++c_.cork_depth_; }
    ~Corked() {
      if (--c_.cork_depth_ == 0 && !c_.closed()) c_.maybe_flush();
    }
    Corked(const Corked&) = delete;
    Corked& operator=(const Corked&) = delete;

   private:
    TcpConnection& c_;
  };

  // Stops reading after the current read (the peer's writes then back up into
  // its own buffers: backpressure across the network) until resume_reading().
  void pause_reading() noexcept { reading_paused_ = true; }
  void resume_reading();

  // Queued output is at high water (ConnectionLimits) and has not drained to
  // low water since. A handler that answers input it has already buffered
  // (pipelined requests) waits for on_backpressure(false).
  bool output_full() const noexcept { return output_full_; }
  const ConnectionLimits& limits() const noexcept { return limits_; }

  bool open() const noexcept { return state_ == State::open; }
  bool closed() const noexcept { return state_ == State::closed; }
  // Why it closed (meaningful once closed()).
  CloseReason::Kind close_kind() const noexcept { return close_kind_; }
  // The transport, or null for plain TCP.
  const StreamTransport* transport() const noexcept { return transport_.get(); }
  std::size_t queued_bytes() const noexcept { return queue_.queued_bytes(); }
  // The peer's TCP address (empty for a Unix socket's peer).
  const boost::asio::ip::tcp::endpoint& remote_endpoint() const noexcept { return remote_; }
  // The peer for logs and reports: "192.0.2.1:5000", "[::1]:5000", or a Unix
  // socket's "unix peer pid 1234 uid 1000".
  const std::string& peer() const noexcept { return peer_; }
  boost::asio::any_io_executor get_executor() { return socket_.get_executor(); }
  StreamHandler& handler() noexcept { return *handler_; }
  // Runs after the handler's on_close; the owner uses it to forget the connection.
  void set_close_observer(std::function<void(TcpConnection&)> observer) { close_observer_ = std::move(observer); }
  // Runs when the transport's handshake has finished, before the handler's
  // on_open; the owner counts handshakes (transport()->resumed_session()).
  void set_handshake_observer(std::function<void(TcpConnection&)> observer) {
    handshake_observer_ = std::move(observer);
  }

 private:
  enum class State { handshaking, open, flushing, half_closed, closed };
  bool accepting_sends() const noexcept { return state_ == State::open; }
  std::span<std::byte> reserve_send(std::size_t size);
  void commit_send(std::size_t reserved, std::size_t used);
  // Hands what was built in the transport's memory to the peer, and reports it written.
  void write_in_place();
  // A batch (or what was built in place) is written: the handler hears of it.
  void report_written(std::size_t bytes);

  void begin();
  void continue_handshake();
  // The transport took a batch but holds some of it: the write is not done yet.
  bool transport_output_waiting() const;
  std::size_t write_socket(boost::system::error_code& ec);
  // Waits for the readiness the transport asked for (or writability) and writes the rest of gather_.
  void write_rest(std::size_t already);
  void wait_then(StreamTransport::Wait wait, std::function<void(const boost::system::error_code&)> then);

  // Reading: wait for input (input_, however the loop learns of it), read
  // until a read leaves nothing over, hand each read to the handler, wait again.
  enum class Reading {
    idle,      // no wait queued: not begun, paused, output full, or closed
    waiting,   // a wait for input, or a read posted to the loop, is queued
    handling,  // the handler has a read's bytes; on_read decides what follows
    ended,     // the peer's end was read: no more input
  };
  // What a read led to.
  enum class Read {
    nothing,  // the socket had nothing after all: the connection waits again
    done,     // a read was handled; what follows is queued (or reading stopped)
    again,    // a read was handled and the next must follow at once
  };
  void do_read();
  // Reads on the loop's next turn: after a gap (start, resume), or after a read
  // that left more, so that one busy connection does not hold the loop.
  void post_read();
  // The wait for input is over: reads unless closed or paused. False when the
  // socket had nothing after all (the connection waits again).
  bool on_readable(const boost::system::error_code& ec);
  // Reads until a read finds nothing or needs no follow-up within this turn;
  // false when nothing was read.
  bool read_now();
  Read read_once();
  // `more`: the input holds more after these `n` bytes (or the end).
  Read on_read(const boost::system::error_code& ec, std::size_t n, bool more);
  void on_read_error(const boost::system::error_code& ec);
  void maybe_flush();
  // After a send: note whether it filled the output, and flush unless corked.
  void sent();
  void flush();
  void on_write(const boost::system::error_code& ec, std::size_t n);
  // A write failed on the spot: on_write(ec) on the loop's next turn, not
  // inside the send that may be on the handler's stack.
  void fail_write_soon(const boost::system::error_code& ec);
  void half_close();
  // The transport ended the exchange in band (see StreamTransport::ended_in_band).
  void end_in_band(StreamTransport::End end, const boost::system::error_code& ec);
  void finish(CloseReason reason);
  // The output bound (ConnectionLimits): the queue grows only by sends and
  // shrinks only by writes, so each crossing is found where it happens.
  void note_output_grew();
  void note_output_shrank();
  bool stops_reading() const noexcept {
    return reading_paused_ || (output_full_ && limits_.stop_reading_when_full);
  }
  void arm_idle_check();
  void hold_while_paused();

  friend class detail::ConnectionInput;  // its wait ends in on_readable

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer linger_timer_;  // the handshake deadline, the hold while paused, the linger
  boost::asio::steady_timer slow_timer_;  // the slow-consumer deadline while output is full
  boost::asio::steady_timer idle_timer_;  // checks limits_.idle_timeout
  ConnectionLimits limits_;
  std::unique_ptr<StreamHandler> handler_;
  std::unique_ptr<StreamTransport> transport_;
  boost::asio::ip::tcp::endpoint remote_;
  std::string peer_;
  detail::WriteQueue queue_;
  std::vector<boost::asio::const_buffer> gather_;
  State state_ = State::open;
  Reading reading_ = Reading::idle;
  int cork_depth_ = 0;
  bool reading_paused_ = false;  // pause_reading(): stay idle until resume_reading()
  bool output_full_ = false;     // queued output reached high water and has not drained to low water
  bool active_ = false;          // a byte read or written since the last idle check
  int quiet_checks_ = 0;         // idle checks in a row that found no activity
  std::uint64_t keepalives_seen_ = 0;  // keepalives_heard() at the last idle check
  bool in_flush_completion_ = false;
  bool reserved_in_transport_ = false;  // the last reserve_send() is the transport's memory
  std::size_t built_in_place_ = 0;      // bytes committed there, not yet handed over
  bool ended_in_band_ = false;  // the transport ended the exchange; the socket lingers
  CloseReason pending_reason_;
  CloseReason::Kind close_kind_ = CloseReason::Kind::local_close;
  std::function<void(TcpConnection&)> close_observer_;
  std::function<void(TcpConnection&)> handshake_observer_;
  // Where a write blocked on the transport's own descriptor waits (shared memory's room doorbell).
  std::unique_ptr<boost::asio::posix::stream_descriptor> own_wait_;
  // How this connection learns of input and reads it (connection_input.hpp).
  // Last: it refers to socket_ and transport_.
  std::unique_ptr<detail::ConnectionInput> input_;
};

}  // namespace volley::net
