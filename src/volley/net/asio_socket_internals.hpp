#pragma once
// basic_socket keeps its implementation (the descriptor and its reactor
// registration) protected. A pointer to that member, taken where it is
// accessible, reads it from any socket; nothing is ever constructed. Used only
// where the Asio is the one this was written against (edge_read_wait.hpp).
#include <boost/asio/ip/tcp.hpp>

namespace volley::net::detail {

struct SocketInternals : boost::asio::ip::tcp::socket {
  static auto& of(boost::asio::ip::tcp::socket& socket) { return (socket.*(&SocketInternals::impl_)).get_implementation(); }
};

}  // namespace volley::net::detail
