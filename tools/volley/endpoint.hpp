#pragma once
// ADDRESS:PORT on the command line ("127.0.0.1:9000", "[::1]:9000"), numeric only.
#include <cstdint>
#include <optional>
#include <string>

#include <boost/asio/ip/udp.hpp>

namespace volley::tools {

// The ADDRESS:PORT text of an address and port given apart (--bind or
// --address, and --port), an IPv6 address in brackets.
inline std::string endpoint_text(const std::string& address, std::uint16_t port) {
  if (address.starts_with("unix:") || address.starts_with("unix-abstract:")) return address;  // --unix: no port
  const bool ipv6 = address.find(':') != std::string::npos;
  return (ipv6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

inline std::optional<boost::asio::ip::udp::endpoint> parse_udp_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  try {
    std::size_t used = 0;
    const unsigned long port = std::stoul(text.substr(colon + 1), &used);
    if (port > 65535 || used != text.size() - colon - 1) return std::nullopt;
    return boost::asio::ip::udp::endpoint(address, static_cast<std::uint16_t>(port));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace volley::tools
