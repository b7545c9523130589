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
// - the socket was read dry (a read that came back short or with EAGAIN) in the
//   handler that queues the wait, with no epoll_wait since; and
// - one thread runs the loop (io_context concurrency hint 1, as the
//   loop-per-thread design's loops have), so no other thread can take the
//   edge between that read and the wait.
// Where the loop is not so (a thread pool, a strand), or Asio's backend is not
// epoll, of() gives null and the connection uses async_wait.
#include <cstddef>
#include <memory>

#include <boost/asio/ip/tcp.hpp>

#if defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define VOLLEY_HAS_EDGE_READ_WAIT 1
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#endif

namespace volley::net {
class TcpConnection;
}

namespace volley::net::detail {

#if defined(VOLLEY_HAS_EDGE_READ_WAIT)

class EdgeReadWait final : public boost::asio::detail::reactor_op {
 public:
  // For `socket` (open, on a loop one thread runs, the epoll backend), or null.
  static std::unique_ptr<EdgeReadWait> make_for(boost::asio::ip::tcp::socket& socket);

  EdgeReadWait(boost::asio::detail::reactor& reactor, boost::asio::ip::tcp::socket& socket);
  EdgeReadWait(const EdgeReadWait&) = delete;
  EdgeReadWait& operator=(const EdgeReadWait&) = delete;

  // Queues the wait; `connection` stays alive until it completes, then
  // connection->on_readable(error) runs on the loop (operation_aborted when the
  // socket closed meanwhile). One wait at a time.
  void start(std::shared_ptr<TcpConnection> connection);

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

#else

// Asio's backend here is not epoll: connections wait with async_wait.
class EdgeReadWait {
 public:
  static std::unique_ptr<EdgeReadWait> make_for(boost::asio::ip::tcp::socket&) { return nullptr; }
  void start(std::shared_ptr<TcpConnection>) {}
};

#endif

}  // namespace volley::net::detail
