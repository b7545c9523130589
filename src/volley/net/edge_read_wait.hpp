#pragma once
// Waiting for input on an edge-triggered epoll registration without re-arming
// it. Asio registers every socket with epoll once, edge-triggered, for input.
// Its async_wait(wait_read) must also complete for input that is already
// there, so each wait re-arms the registration with epoll_ctl(MOD), which
// reports a socket that is readable now. That is one system call per message
// on top of epoll_wait, the read and the write.
//
// A connection that has just read its socket dry does not need it: any byte
// that arrives after that read raises a new edge, reported by the loop's next
// epoll_wait. So this wait is queued on the reactor as a read operation that
// says "not yet" when Asio tries it at once, and "ready" when the edge comes;
// the connection then reads. Correct only where both hold:
// - the socket was read dry (see below) in the handler that queues the wait,
//   with no epoll_wait since; and
// - one thread runs the loop (io_context concurrency hint 1, as the
//   loop-per-thread design's loops have), so no other thread can take the
//   edge between that read and the wait.
// "Read dry" needs care: a read that comes back short may have stopped at
// the peer's end (or an error) that arrived with the bytes, under the same
// edge, and no edge follows. The socket's registration asks epoll for
// EPOLLRDHUP too, so an edge reported after the end arrived says so, as one
// that brings a reset or error says EPOLLERR or EPOLLHUP. The connection reads
// through read_some() below, a plain receive: a read that fills the buffer,
// or comes after an edge that reported the end or an error, is followed by
// another; any other short read left the socket dry, since what arrives
// after it raises an edge of its own, reported with the end if the end has
// come. (recv, not recvmsg with the kernel's count, TCP_INQ, which an earlier
// version asked for: 0.3-0.4 us less a read on this project's VM.)
// A transport reads the socket itself and must know when it read it dry:
// for one, TCP_INQ is turned on too (EdgeReader::transport). The kernel
// counts an end still to be read in it, not a reset: left_over() is asked
// after a transport's reads as after the connection's own, whichever wait
// (this one or Asio's) took the edge.
//
// This reaches into Asio's epoll reactor (its detail:: operations, the
// socket's registration, the events an edge reported), so it is compiled only
// for the Asio it was written and tested against (Boost 1.81, Debian
// bookworm's). Where it is another Asio, or its backend is not epoll, or the
// loop is not one thread's (a thread pool, a strand), or the kernel refuses
// EPOLLRDHUP (before 2.6.17) or, for a transport, TCP_INQ (before 4.18),
// make_edge_input() gives null and the connection uses the reactor's wait
// (connection_input.hpp).
#include <cstddef>
#include <memory>
#include <span>

#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

#include "connection_input.hpp"

#if defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && BOOST_VERSION == 108100
#define VOLLEY_HAS_EDGE_READ_WAIT 1
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#endif

namespace volley::net {
class TcpConnection;
}

namespace volley::net::detail {

#if defined(VOLLEY_HAS_EDGE_READ_WAIT)

// Made by make_edge_input() (connection_input.hpp) for a socket open on a
// loop one thread runs, on the epoll backend.
class EdgeReadWait final : public boost::asio::detail::reactor_op, public ConnectionInput {
 public:
  EdgeReadWait(boost::asio::detail::reactor& reactor, boost::asio::ip::tcp::socket& socket);

  Kind kind() const noexcept override { return Kind::edge; }
  // One non-blocking read of the socket (errors as Asio's read_some gives
  // them: eof, would_block, ...).
  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override;
  // After a short read (this input's or a transport's): the socket's latest
  // edge reported the peer's end, a reset or an error, which is still to be
  // read. (A full read is followed by another anyway.)
  bool left_over() const noexcept override;

  // Queues the wait; `connection` stays alive until it completes, then
  // ready(*connection, error) runs on the loop (operation_aborted when the
  // socket closed meanwhile).
  void wait(std::shared_ptr<TcpConnection> connection) override;

 private:
  static status perform(boost::asio::detail::reactor_op* base);
  static void complete(void* owner, boost::asio::detail::scheduler_operation* base,
                       const boost::system::error_code& ignored, std::size_t bytes);

  boost::asio::detail::reactor& reactor_;
  boost::asio::ip::tcp::socket& socket_;
  std::shared_ptr<TcpConnection> waiting_;
  // False while start() hands the operation to the reactor, which tries it at
  // once: "not yet". Only an edge reported later completes it.
  bool queued_ = false;
};

#endif

}  // namespace volley::net::detail
