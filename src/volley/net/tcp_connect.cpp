#include <volley/net/tcp_connect.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/ip/address.hpp>

#include <volley/net/unix_socket.hpp>

namespace volley::net {

namespace asio = boost::asio;

namespace {

// In Asio's own error type: its calls report through it.
asio::ip::tcp::socket connect_reporting_asio_errors(asio::io_context& loop, const std::string& host, std::uint16_t port,
                                  std::chrono::milliseconds timeout, boost::system::error_code& ec) {
  asio::ip::tcp::resolver resolver(loop);
  const auto results = resolver.resolve(host, std::to_string(port), asio::ip::tcp::resolver::numeric_service, ec);
  asio::ip::tcp::socket socket(loop);
  if (ec) return socket;
  for (const auto& entry : results) {
    socket.close(ec);
    socket.open(entry.endpoint().protocol(), ec);
    if (ec) continue;
    socket.non_blocking(true, ec);
    socket.connect(entry.endpoint(), ec);
    if (ec == asio::error::in_progress || ec == asio::error::would_block) {
      pollfd pfd{socket.native_handle(), POLLOUT, 0};
      const int ready = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
      if (ready == 0) {
        ec = asio::error::timed_out;
        continue;
      }
      int so_error = 0;
      socklen_t len = sizeof so_error;
      ::getsockopt(socket.native_handle(), SOL_SOCKET, SO_ERROR, &so_error, &len);
      ec = so_error == 0 ? boost::system::error_code{}
                         : boost::system::error_code(so_error, boost::system::system_category());
    }
    if (!ec) {
      socket.set_option(asio::ip::tcp::no_delay(true), ec);
      return socket;
    }
  }
  boost::system::error_code ignored;
  socket.close(ignored);
  return socket;
}

}  // namespace

asio::ip::tcp::socket connect_tcp(asio::io_context& loop, const std::string& host, std::uint16_t port,
                                  std::chrono::milliseconds timeout, std::error_code& error) {
  if (const auto unix_address = parse_unix_address(host)) {
    asio::ip::tcp::socket socket(loop);
    const int fd = connect_unix(*unix_address, error);
    boost::system::error_code ec;
    if (fd >= 0) socket.assign(asio::ip::tcp::v4(), fd, ec);  // only the descriptor matters (unix_socket.hpp)
    if (ec) error = ec;
    return socket;
  }
  boost::system::error_code ec;
  auto socket = connect_reporting_asio_errors(loop, host, port, timeout, ec);
  error = ec;
  return socket;
}

std::string endpoint_text(const asio::ip::tcp::endpoint& endpoint) {
  const std::string address = endpoint.address().to_string();
  const std::string port = std::to_string(endpoint.port());
  return endpoint.address().is_v6() ? "[" + address + "]:" + port : address + ":" + port;
}

bool split_server_address(std::string_view text, std::string& host, std::uint16_t& port) {
  if (parse_unix_address(std::string(text))) {
    host = text;
    port = 0;
    return true;
  }
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return false;
  std::string_view name = text.substr(0, colon);
  if (name.front() == '[') {
    if (name.size() < 3 || name.back() != ']') return false;
    name = name.substr(1, name.size() - 2);
  } else if (name.find(':') != std::string_view::npos) {
    return false;  // an IPv6 address needs its brackets
  }
  unsigned value = 0;
  for (const char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > 65535) return false;
  }
  if (value == 0) return false;
  host = name;
  port = static_cast<std::uint16_t>(value);
  return true;
}

}  // namespace volley::net
