#include "edge_read_wait.hpp"

#if !defined(VOLLEY_HAS_EDGE_READ_WAIT)

namespace volley::net::detail {
// Asio's backend here is not epoll: connections wait with async_wait.
std::unique_ptr<ConnectionInput> make_edge_input(boost::asio::ip::tcp::socket&, EdgeReader) { return nullptr; }
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
#include "tcp_inq.hpp"  // receive_result

namespace volley::net::detail {

namespace asio = boost::asio;

namespace {

using Reactor = asio::detail::epoll_reactor;

// Asio keeps the reactor's epoll descriptor, a registration's events and
// what an edge reported out of reach. Pointers to the three members are
// named here through explicit instantiations, where access is not checked.
template <class Tag, typename Tag::type Member>
struct PrivateMember {
  friend typename Tag::type member_of(Tag) { return Member; }
};
struct EpollDescriptor {
  using type = int Reactor::*;
  friend type member_of(EpollDescriptor);
};
struct RegisteredEvents {
  using type = std::uint32_t Reactor::descriptor_state::*;
  friend type member_of(RegisteredEvents);
};
struct TaskResult {
  using type = unsigned int asio::detail::scheduler_operation::*;
  friend type member_of(TaskResult);
};
template struct PrivateMember<EpollDescriptor, &Reactor::epoll_fd_>;
template struct PrivateMember<RegisteredEvents, &Reactor::descriptor_state::registered_events_>;
template struct PrivateMember<TaskResult, &asio::detail::scheduler_operation::task_result_>;

// What the reactor reported for the socket's latest edge (Asio hands the
// events to the descriptor's operation as its result). A C-style cast
// reaches the descriptor state's (private) operation base.
std::uint32_t reported_events(asio::ip::tcp::socket& socket) {
  const auto* state = (const asio::detail::scheduler_operation*)SocketInternals::of(socket).reactor_data_;  // NOLINT
  return state != nullptr ? state->*member_of(TaskResult{}) : 0;
}

// Adds EPOLLRDHUP to the socket's registration, and to the events Asio
// starts from when it changes the registration later (for a write's wait).
// Done as the connection is made, before any operation is queued on the
// socket, so nothing else touches the registration meanwhile.
bool report_the_peers_end(Reactor& reactor, asio::ip::tcp::socket& socket) {
  auto* state = SocketInternals::of(socket).reactor_data_;
  if (state == nullptr) return false;
  std::uint32_t& registered = state->*member_of(RegisteredEvents{});
  epoll_event event{};
  event.events = registered | EPOLLRDHUP;
  event.data.ptr = state;
  if (::epoll_ctl(reactor.*member_of(EpollDescriptor{}), EPOLL_CTL_MOD, socket.native_handle(), &event) != 0)
    return false;
  registered |= EPOLLRDHUP;
  return true;
}

}  // namespace

std::unique_ptr<ConnectionInput> make_edge_input(asio::ip::tcp::socket& socket, EdgeReader reader) {
  // A strand (the thread-pool design) is not a loop's own executor.
  const auto* own = socket.get_executor().target<asio::io_context::executor_type>();
  if (own == nullptr || !socket.is_open()) return nullptr;
  asio::io_context& loop = own->context();
  if (asio::use_service<asio::detail::scheduler>(loop).concurrency_hint() != 1) return nullptr;
  Reactor& reactor = asio::use_service<Reactor>(loop);
  if (reader == EdgeReader::connection) {
    // A short read cannot tell "dry" from "stopped at the end" by itself:
    // the edge that brought the end says it.
    if (!report_the_peers_end(reactor, socket)) return nullptr;
  } else {
    // The transport's receives ask the kernel what they left.
    const int on = 1;
    if (::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_INQ, &on, sizeof on) != 0) return nullptr;
  }
  return std::make_unique<EdgeReadWait>(reactor, socket);
}

EdgeReadWait::EdgeReadWait(asio::detail::reactor& reactor, asio::ip::tcp::socket& socket)
    : reactor_op(boost::system::error_code(), &EdgeReadWait::perform, &EdgeReadWait::complete),
      reactor_(reactor),
      socket_(socket) {}

std::size_t EdgeReadWait::read_some(std::span<std::byte> buffer, boost::system::error_code& ec) {
  ssize_t n;
  do {
    n = ::recv(socket_.native_handle(), buffer.data(), buffer.size(), 0);  // the socket is non-blocking
  } while (n < 0 && errno == EINTR);
  return receive_result(n, buffer.size(), ec);
}

bool EdgeReadWait::left_over() const noexcept {
  // A short read left the socket dry unless the end (or an error) had come:
  // its edge said so, and no other edge follows. (What comes after the read
  // raises an edge of its own.) The end's edge may have been taken by this
  // wait or by Asio's, or come while nothing waited: the registration keeps
  // the latest edge's events whoever took it.
  return (reported_events(socket_) & (EPOLLRDHUP | EPOLLERR | EPOLLHUP)) != 0;
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
  // Called from the reactor for the edge it just reported, and by start_op()
  // as the wait is queued, which must not complete it.
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
  ready(*connection, ec);
}

}  // namespace volley::net::detail

#endif
