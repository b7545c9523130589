#include "edge_read_wait.hpp"

#if !defined(VOLLEY_HAS_EDGE_READ_WAIT)

namespace volley::net::detail {
// Asio's backend here is not epoll: connections wait with async_wait.
std::unique_ptr<ConnectionInput> make_edge_input(boost::asio::ip::tcp::socket&) { return nullptr; }
}  // namespace volley::net::detail

#else

#include <cerrno>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>

#include <volley/net/tcp_connection.hpp>

#include "asio_socket_internals.hpp"
#include "tcp_inq.hpp"

namespace volley::net::detail {

namespace asio = boost::asio;

std::unique_ptr<ConnectionInput> make_edge_input(asio::ip::tcp::socket& socket) {
  // A strand (the thread-pool design) is not a loop's own executor.
  const auto* own = socket.get_executor().target<asio::io_context::executor_type>();
  if (own == nullptr) return nullptr;
  asio::io_context& loop = own->context();
  if (asio::use_service<asio::detail::scheduler>(loop).concurrency_hint() != 1) return nullptr;
  // Without the kernel's count of what is left, a short read cannot tell "dry"
  // from "stopped at the end".
  const int on = 1;
  if (!socket.is_open() || ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_INQ, &on, sizeof on) != 0)
    return nullptr;
  return std::make_unique<EdgeReadWait>(asio::use_service<asio::detail::reactor>(loop), socket);
}

EdgeReadWait::EdgeReadWait(asio::detail::reactor& reactor, asio::ip::tcp::socket& socket)
    : reactor_op(boost::system::error_code(), &EdgeReadWait::perform, &EdgeReadWait::complete),
      reactor_(reactor),
      socket_(socket) {}

std::size_t EdgeReadWait::read_some(std::span<std::byte> buffer, boost::system::error_code& ec) {
  int left = -1;
  const ssize_t n = receive_counting_left(socket_.native_handle(), buffer.data(), buffer.size(), left);
  const std::size_t read = receive_result(n, buffer.size(), ec);
  // No count (never expected with TCP_INQ on): assume more, so the
  // connection reads again and waits only after a read that finds nothing.
  // The kernel counts an end still to be read as 1.
  left_over_ = !ec && left != 0;
  return read;
}

void EdgeReadWait::wait(std::shared_ptr<TcpConnection> connection) {
  waiting_ = std::move(connection);
  ec_ = boost::system::error_code();
  bytes_transferred_ = 0;
  auto& socket = SocketInternals::of(socket_);
  queued_ = false;
  // allow_speculative: the reactor tries the operation at once (perform() says
  // "not yet") instead of re-arming the registration with epoll_ctl(MOD).
  reactor_.start_op(asio::detail::reactor::read_op, socket.socket_, socket.reactor_data_, this,
                    /*is_continuation=*/true, /*allow_speculative=*/true);
  queued_ = true;
}

asio::detail::reactor_op::status EdgeReadWait::perform(asio::detail::reactor_op* base) {
  auto* self = static_cast<EdgeReadWait*>(base);
  if (!self->queued_) return not_done;
  // Called from the reactor for the edge it just reported, whose events the
  // socket's descriptor state still holds (Asio passes them on as the
  // operation's result). A reset or error that came with bytes, under the
  // same edge, is noted: the bytes' read will come back short with nothing
  // left, yet the socket still has the error to give.
  auto& socket = SocketInternals::of(self->socket_);
  // A C-style cast reaches the descriptor state's (private) operation base.
  const auto* state = (const asio::detail::scheduler_operation*)socket.reactor_data_;  // NOLINT
  if (state != nullptr && (state->*(&EdgeReadWait::task_result_) & (EPOLLERR | EPOLLHUP)) != 0) self->hung_up_ = true;
  return done;
}

void EdgeReadWait::complete(void* owner, asio::detail::scheduler_operation* base, const boost::system::error_code&,
                            std::size_t) {
  auto* self = static_cast<EdgeReadWait*>(base);
  // The connection owns this operation: after the last use of `self` below it
  // may go, with it, when `connection` does.
  const std::shared_ptr<TcpConnection> connection = std::move(self->waiting_);
  const boost::system::error_code ec = self->ec_;
  self->queued_ = false;
  if (owner == nullptr) return;  // the loop is being destroyed: release the connection, call nothing
  ready(*connection, ec);
}

}  // namespace volley::net::detail

#endif
