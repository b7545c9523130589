#pragma once
// How a TcpConnection learns that input is ready, and reads it: one interface,
// with one implementation chosen when the connection is made, from what its
// loop offers.
// - reactor: Asio's async_wait, then a plain receive (any loop: a thread
//   pool's strands, a loop with no better way; TLS and WebSocket always).
// - edge: the epoll edge that follows a read to empty, without Asio's
//   re-arming epoll_ctl per wait (edge_read_wait.hpp; a loop one thread
//   runs, plain TCP).
// - spin: a busy-polling loop reads the socket itself on every turn
//   (spin_readers.hpp); past its few places, the reactor wait.
// - io_uring: a multishot receive in the loop's ring, into the loop's
//   buffers (uring_receive.hpp; loops given a UringReceiver, plain TCP).
// The connection's read loop is the same for all four: wait(), then ready()
// runs on the loop, then read_some() until a read leaves nothing over.
#include <cstddef>
#include <memory>
#include <span>

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace volley::net {
class StreamTransport;
class TcpConnection;
}  // namespace volley::net

namespace volley::net::detail {

class ConnectionInput {
 public:
  enum class Kind { reactor, edge, spin, io_uring };

  // The input for a connection on `socket` (open, on its loop), whose bytes go
  // through `transport` (TLS, WebSocket; null: plain TCP).
  static std::unique_ptr<ConnectionInput> make_for(boost::asio::ip::tcp::socket& socket, StreamTransport* transport);
  // The input a connection uses (for tests and diagnostics).
  static Kind kind_of(const TcpConnection& connection) noexcept;

  virtual ~ConnectionInput() = default;
  ConnectionInput(const ConnectionInput&) = delete;
  ConnectionInput& operator=(const ConnectionInput&) = delete;

  virtual Kind kind() const noexcept = 0;
  // Waits for input, then runs ready() on the loop; `connection` stays alive
  // until then. One wait at a time, queued only after a read that left
  // nothing over (or at the start).
  virtual void wait(std::shared_ptr<TcpConnection> connection) = 0;
  // One non-blocking read: the count, or would_block, eof, the socket's error.
  virtual std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) = 0;
  // More input, or the end, is known to be there after the last read_some:
  // read again rather than wait.
  virtual bool left_over() const noexcept = 0;
  // Some of it is in buffers the whole loop shares: read it within this turn.
  virtual bool holds_shared_buffers() const noexcept { return false; }
  // The connection is finishing: let go of what the input holds for it.
  virtual void stop() {}
  // For a spinning loop: whether a read may find anything (StreamTransport::worth_reading).
  virtual bool worth_reading() { return true; }
  // The connection is about to queue an Asio operation on its socket (a write
  // the kernel did not take at once): a socket a spinning input took out of
  // the reactor goes back in. The error when it cannot.
  virtual boost::system::error_code use_reactor() { return {}; }

  // The wait is over (`ec`: its error, operation_aborted when the socket
  // closed): the connection reads. False when it read nothing after all.
  static bool ready(TcpConnection& connection, const boost::system::error_code& ec);
  // A spinning loop's look before it calls ready(): whether it is worth it.
  static bool worth_reading(TcpConnection& connection);
  // The connection has a write in flight (which may be queued on the reactor).
  static bool writing(const TcpConnection& connection) noexcept;

 protected:
  ConnectionInput() = default;
};

const char* to_string(ConnectionInput::Kind kind) noexcept;

// The reactor's wait and a plain receive.
std::unique_ptr<ConnectionInput> make_reactor_input(boost::asio::ip::tcp::socket& socket);
// Who reads a socket whose input the edge wait announces.
enum class EdgeReader {
  connection,  // the connection, through the edge input's read_some()
  transport,   // a transport, which must know when it has read the socket dry (TCP_INQ on)
};
// The edge wait (edge_read_wait.cpp), or null where it cannot run for `socket`.
std::unique_ptr<ConnectionInput> make_edge_input(boost::asio::ip::tcp::socket& socket, EdgeReader reader);
// The edge wait where it can run, else the reactor's.
std::unique_ptr<ConnectionInput> make_readiness_input(boost::asio::ip::tcp::socket& socket);

}  // namespace volley::net::detail
