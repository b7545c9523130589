#pragma once
// What a TcpConnection reads and writes through when the bytes on the socket
// are not the application's own (TLS, WebSocket), or are not on the socket at
// all (shared memory, whose socket carries the set-up and the doorbells). Every call is non-blocking on the
// connection's socket; one that cannot go on says which readiness it waits
// for, and the connection waits for it on its loop. A connection without a
// transport reads and writes the socket directly (no virtual call, no copy).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

namespace volley::net {

class StreamTransport {
 public:
  // own_descriptor: readability of the transport's own_descriptor().
  enum class Wait { none, read, write, own_descriptor };

  virtual ~StreamTransport() = default;

  // The connection's socket (non-blocking), given once before anything else.
  virtual void attach(int fd) = 0;
  // Takes the handshake as far as it goes without blocking: Wait::none when
  // it is done, a wait to retry after, or `ec` set when it failed.
  virtual Wait handshake(boost::system::error_code& ec) = 0;
  // As read(2) on the socket: the bytes read (the buffer filled, or up to the
  // point where the socket had no more); `ec` = would_block when there was
  // nothing (see blocked_on()), eof at the peer's orderly end. would_block
  // with blocked_on() none and has_buffered_input(): the transport ended its
  // turn (a bound on the work one read may do) with input left, and is
  // called again once the loop's other work has run.
  virtual std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) = 0;
  // As writev(2): how many of the bytes were taken; would_block when none.
  // After a short write the next call must start at the first byte not taken.
  virtual std::size_t write_some(std::span<const boost::asio::const_buffer> buffers,
                                 boost::system::error_code& ec) = 0;
  // Building output in place, for a transport whose output is memory (shared
  // memory's ring): room for `size` bytes in it, or empty where there is
  // none (every other transport) or not that much now. The connection asks
  // only while nothing of its own waits to be written, so bytes keep their
  // order. commit_output() takes the first `used` bytes of that room; the
  // next write_some (with no buffers, if need be) hands them to the peer.
  virtual std::span<std::byte> reserve_output(std::size_t /*size*/) { return {}; }
  virtual void commit_output(std::size_t /*used*/) {}
  // After a call that stopped short: the readiness to wait for before the
  // next (TLS may need to write in order to read, and the other way round).
  virtual Wait blocked_on() const = 0;
  // Input already taken off the socket and not yet handed out (or an end
  // already seen): the connection must read again without waiting, since no
  // new readiness will announce it.
  virtual bool has_buffered_input() const = 0;
  // Before the connection sleeps until the socket is readable (not when a
  // busy-polling loop spins on it): a transport whose input raises no
  // readiness by itself (shared memory) asks its peer to ring the socket.
  // False when input came meanwhile: the connection reads again instead.
  virtual bool prepare_to_wait() { return true; }
  // For a busy-polling loop that spins on the connection: whether a read now
  // may find anything. Shared memory looks at its ring (and, now and then,
  // goes on to read so that its socket's end is seen); a transport whose
  // input is on the socket must read to know (the default).
  virtual bool worth_reading() { return true; }
  // A descriptor of the transport's own that a write blocked with
  // Wait::own_descriptor waits on (shared memory's room doorbell); -1 if none.
  virtual int own_descriptor() const { return -1; }
  // The transport's last receive from the socket left it empty, as the kernel
  // said (EAGAIN, or TCP_INQ's count of 0, which counts a pending end as 1):
  // anything new raises a new epoll edge, so the connection may wait for that
  // edge instead of re-arming its registration (edge_read_wait.hpp).
  virtual bool read_socket_dry() const { return false; }
  // Output already taken (write_some counted it) but not yet on the socket:
  // the connection waits for writability and calls write_some again (with
  // nothing new, if need be) until this is false, before the write completes.
  virtual bool has_buffered_output() const { return false; }
  enum class End { none, closed_by_peer, protocol_error };
  // After a read_some that failed: whether the transport ended the exchange
  // in band while the socket stays open (a WebSocket close frame received, or
  // a protocol error answered with one). The connection then flushes,
  // half-closes and keeps reading (the transport discards what comes) until
  // the peer's end of the socket or the linger timeout, as after its own
  // close(), so the peer reads the transport's last word before the socket goes.
  virtual End ended_in_band() const { return End::none; }
  // Our orderly end (TLS close_notify), before the connection's TCP FIN.
  // Best effort and non-blocking.
  virtual void shutdown_send() = 0;
  // Why this end closes, for a transport that tells its peer in band (a
  // WebSocket close frame's code and reason). Called before shutdown_send()
  // on an orderly close, which then carries it; `now` (an abort, where
  // nothing queued will be sent) says it at once, as far as the socket takes it.
  enum class Goodbye { done, going_away, peer_silent, idle, slow_consumer, bad_input };
  virtual void say_goodbye(Goodbye /*why*/, std::string_view /*detail*/, bool /*now*/) {}
  // Whether say_goodbye() tells the peer anything.
  virtual bool closes_in_band() const { return false; }
  // A keepalive of the transport's own (a WebSocket ping, which browsers
  // answer by themselves): sends one and returns true, or returns false
  // where there is none (plain TCP, TLS) and the caller sends its own.
  virtual bool send_keepalive() { return false; }
  // Answers to those keepalives heard so far (pongs): a caller that sees the
  // count grow knows the peer is there, though no data came.
  virtual std::uint64_t keepalives_heard() const { return 0; }
  // After the handshake: it resumed a session the client was issued before
  // (TLS session resumption: no certificate sent, one round trip less).
  virtual bool resumed_session() const { return false; }
  // For logs and reports: "TLSv1.3 TLS_AES_256_GCM_SHA384".
  virtual std::string describe() const = 0;
};

}  // namespace volley::net
