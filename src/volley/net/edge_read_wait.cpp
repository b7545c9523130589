#include "edge_read_wait.hpp"

#if defined(VOLLEY_HAS_EDGE_READ_WAIT)

#include <boost/asio/io_context.hpp>

#include <volley/net/tcp_connection.hpp>

namespace volley::net::detail {

namespace {

namespace asio = boost::asio;

// basic_socket keeps its implementation (the descriptor and its reactor
// registration) protected. A pointer to that member, taken where it is
// accessible, reads it from any socket; nothing is ever constructed.
struct SocketInternals : asio::ip::tcp::socket {
  static auto& of(asio::ip::tcp::socket& socket) { return (socket.*(&SocketInternals::impl_)).get_implementation(); }
};

}  // namespace

std::unique_ptr<EdgeReadWait> EdgeReadWait::make_for(asio::ip::tcp::socket& socket) {
  // A strand (the thread-pool design) is not a loop's own executor.
  const auto* own = socket.get_executor().target<asio::io_context::executor_type>();
  if (own == nullptr) return nullptr;
  asio::io_context& loop = own->context();
  if (asio::use_service<asio::detail::scheduler>(loop).concurrency_hint() != 1) return nullptr;
  return std::make_unique<EdgeReadWait>(asio::use_service<asio::detail::reactor>(loop), socket);
}

EdgeReadWait::EdgeReadWait(asio::detail::reactor& reactor, asio::ip::tcp::socket& socket)
    : reactor_op(boost::system::error_code(), &EdgeReadWait::perform, &EdgeReadWait::complete),
      reactor_(reactor),
      socket_(socket) {}

void EdgeReadWait::start(std::shared_ptr<TcpConnection> connection) {
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
  return static_cast<EdgeReadWait*>(base)->queued_ ? done : not_done;
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
  connection->on_readable(ec);
}

}  // namespace volley::net::detail

#endif
