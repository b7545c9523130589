#pragma once
// Closing a socket through Asio cancels the operations it has in flight. Boost
// 1.81's io_uring backend can lose such a cancelled operation's completion,
// after which its loop never stops (docs/BENCHMARKS.md, "Asio's io_uring
// backend"). On that backend this closes without a cancel: a shutdown wakes
// every wait in flight (the kernel reports a shut-down socket readable and
// writable, even a UDP one that is not connected), and the socket moves to one
// more wait of its own, behind them, which lets go of it, and so closes it,
// once those have completed. On epoll it is close().
//
// For a socket whose operations in flight end on a shutdown: waits, and TCP
// reads (they see the end of the stream). Not for a receive in flight on an
// unconnected UDP socket: the shutdown makes it readable with nothing to read,
// so the receive never completes (on io_uring it polls again at once, for
// ever). Such a socket waits for readiness and reads without blocking.
//
// Volley's own sockets close this way; a socket of your own that may close
// with an operation in flight, in an io_uring build, should too.
#include <sys/socket.h>

#include <memory>
#include <utility>

#include <boost/system/error_code.hpp>

namespace volley::net {

// A socket or acceptor: closed (or, on io_uring, closing) and not open after this.
template <class Socket>
void close_without_cancel(Socket& socket) {
  if (!socket.is_open()) return;
#if defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
  ::shutdown(socket.native_handle(), SHUT_RDWR);  // ENOTCONN for an unconnected socket still wakes its waits
  auto closing = std::make_shared<Socket>(std::move(socket));
  closing->async_wait(Socket::wait_read, [closing](const boost::system::error_code&) {});
#else
  boost::system::error_code ignored;
  socket.close(ignored);
#endif
}

}  // namespace volley::net
