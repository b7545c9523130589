#pragma once
// Connecting a client socket with a deadline, before or outside any running loop.
#include <chrono>
#include <string>
#include <system_error>

#include <boost/asio/ip/tcp.hpp>

namespace volley::net {

// Resolves `host` and connects a socket owned by `loop`, trying each address until
// one answers within `timeout`. On failure `ec` says why and the socket is closed.
// A Unix address as `host` ("unix:/run/svc.sock", unix_socket.hpp) connects
// to that socket instead; `port` is not used.
boost::asio::ip::tcp::socket connect_tcp(boost::asio::io_context& loop, const std::string& host, std::uint16_t port,
                                         std::chrono::milliseconds timeout, std::error_code& ec);

}  // namespace volley::net
