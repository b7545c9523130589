#include "reactor_membership.hpp"

#include "edge_read_wait.hpp"  // VOLLEY_HAS_EDGE_READ_WAIT: the Asio this is written against

#if !defined(VOLLEY_HAS_EDGE_READ_WAIT)

namespace volley::net::detail {
bool can_leave_reactor() noexcept { return false; }
bool leave_reactor(boost::asio::ip::tcp::socket&) noexcept { return false; }
boost::system::error_code rejoin_reactor(boost::asio::ip::tcp::socket&) noexcept { return {}; }
}  // namespace volley::net::detail

#else

#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>

#include "asio_socket_internals.hpp"

namespace volley::net::detail {

namespace asio = boost::asio;

bool can_leave_reactor() noexcept { return true; }

bool leave_reactor(asio::ip::tcp::socket& socket) noexcept {
  auto& impl = SocketInternals::of(socket);
  if (impl.socket_ < 0 || impl.reactor_data_ == nullptr) return false;
  auto& reactor = asio::use_service<asio::detail::reactor>(asio::query(socket.get_executor(), asio::execution::context));
  // Not closing: epoll_ctl(DEL). With nothing queued, nothing is aborted.
  reactor.deregister_descriptor(impl.socket_, impl.reactor_data_, false);
  reactor.cleanup_descriptor_data(impl.reactor_data_);  // frees it and nulls reactor_data_
  return true;
}

boost::system::error_code rejoin_reactor(asio::ip::tcp::socket& socket) noexcept {
  auto& impl = SocketInternals::of(socket);
  if (impl.socket_ < 0 || impl.reactor_data_ != nullptr) return {};
  auto& reactor = asio::use_service<asio::detail::reactor>(asio::query(socket.get_executor(), asio::execution::context));
  const int err = reactor.register_descriptor(impl.socket_, impl.reactor_data_);
  if (err == 0) return {};
  // Refused, the registration Asio made is let go: the socket stays out, as before.
  reactor.deregister_descriptor(impl.socket_, impl.reactor_data_, true);
  reactor.cleanup_descriptor_data(impl.reactor_data_);
  return {err, asio::error::get_system_category()};
}

}  // namespace volley::net::detail

#endif
