#pragma once
// Connecting a client socket with a deadline, before or outside any running loop.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include <boost/asio/ip/tcp.hpp>

namespace volley::net {

// Resolves `host` and connects a socket owned by `loop`, trying each address until
// one answers within `timeout`. On failure `ec` says why and the socket is closed.
// A Unix address as `host` ("unix:/run/svc.sock", unix_socket.hpp) connects
// to that socket instead; `port` is not used.
boost::asio::ip::tcp::socket connect_tcp(boost::asio::io_context& loop, const std::string& host, std::uint16_t port,
                                         std::chrono::milliseconds timeout, std::error_code& ec);

// How logs and reports name a TCP endpoint: "192.0.2.1:5000", "[2001:db8::1]:5000".
std::string endpoint_text(const boost::asio::ip::tcp::endpoint& endpoint);
// A server as a client is told of it: "HOST:PORT" ("192.0.2.1:5000",
// "[::1]:5000", "svc.internal:5000"), or a Unix address (all of it the
// host, port 0). False when it is neither (no port, or a bad one).
bool split_server_address(std::string_view text, std::string& host, std::uint16_t& port);

}  // namespace volley::net
