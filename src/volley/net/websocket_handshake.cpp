#include "websocket_handshake.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include <boost/asio/buffer.hpp>
// GCC 12 under -fsanitize=address: a false -Wmaybe-uninitialized inside
// Beast's parser (see src/volley/http/connection_handler.cpp).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#pragma GCC diagnostic pop
#include <fmt/format.h>

#include <volley/net/websocket.hpp>

namespace volley::net {
namespace {

class HandshakeCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "volley.websocket.handshake"; }
  std::string message(int value) const override {
    switch (static_cast<WebSocketHandshakeErrc>(value)) {
      case WebSocketHandshakeErrc::request_too_large: return "websocket upgrade: HTTP head over 8 KiB";
      case WebSocketHandshakeErrc::malformed_head: return "websocket upgrade: not an HTTP/1.1 head";
      case WebSocketHandshakeErrc::not_get: return "websocket upgrade: method is not GET";
      case WebSocketHandshakeErrc::not_an_upgrade:
        return "websocket upgrade: no \"Upgrade: websocket\" with \"Connection: Upgrade\"";
      case WebSocketHandshakeErrc::no_host: return "websocket upgrade: no Host header";
      case WebSocketHandshakeErrc::bad_version: return "websocket upgrade: Sec-WebSocket-Version is not one value of 13";
      case WebSocketHandshakeErrc::bad_key: return "websocket upgrade: Sec-WebSocket-Key is not one value of 16 bytes in base64";
      case WebSocketHandshakeErrc::unknown_target: return "websocket upgrade: request target not served here";
      case WebSocketHandshakeErrc::refused: return "websocket upgrade: the server did not answer 101 Switching Protocols";
      case WebSocketHandshakeErrc::bad_accept: return "websocket upgrade: Sec-WebSocket-Accept does not match the key";
      case WebSocketHandshakeErrc::closed: return "websocket upgrade: the peer closed the connection first";
    }
    return "websocket upgrade: unknown error";
  }
};

namespace http = boost::beast::http;

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

// Whether a comma-separated header value ("keep-alive, Upgrade") holds `token`.
bool has_token(std::string_view value, std::string_view token) noexcept {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (equals_ignoring_case(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

std::string base64(const unsigned char* data, std::size_t size) {
  std::string out(4 * ((size + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// 16 bytes in base64 are 22 characters and "==".
bool is_key(std::string_view key) noexcept {
  if (key.size() != 24 || key[22] != '=' || key[23] != '=') return false;
  return std::all_of(key.begin(), key.begin() + 22, [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
  });
}

std::string status_response(int status, std::string_view reason, std::string_view body, std::string_view extra = {}) {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n{}",
                     status, reason, body.size() + 1, extra, fmt::format("{}\n", body));
}

detail::UpgradeAnswer refuse(WebSocketHandshakeErrc e, int status, std::string_view reason, std::string_view extra = {}) {
  const std::error_code error = make_error_code(e);
  return {status_response(status, reason, error.message(), extra), error};
}

}  // namespace

const std::error_category& websocket_handshake_category() noexcept {
  static const HandshakeCategory category;
  return category;
}

std::string websocket_accept_key(const std::string& client_key) {
  static constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  const std::string input = client_key + std::string(kGuid);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_Digest(input.data(), input.size(), digest.data(), &size, EVP_sha1(), nullptr) != 1)
    throw std::runtime_error("websocket: SHA-1 unavailable");
  return base64(digest.data(), size);
}

namespace detail {

std::size_t http_head_size(std::span<const std::byte> bytes) noexcept {
  static constexpr std::array<std::byte, 4> kEnd{std::byte{'\r'}, std::byte{'\n'}, std::byte{'\r'}, std::byte{'\n'}};
  const auto it = std::search(bytes.begin(), bytes.end(), kEnd.begin(), kEnd.end());
  return it == bytes.end() ? 0 : static_cast<std::size_t>(it - bytes.begin()) + kEnd.size();
}

UpgradeAnswer answer_oversize_head() {
  return refuse(WebSocketHandshakeErrc::request_too_large, 431, "Request Header Fields Too Large");
}

UpgradeAnswer answer_upgrade(std::string_view head, const std::string& accept_target) {
  http::request_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(kMaxHttpHead));
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(head.data(), head.size()), ec);
  if (ec || !parser.is_header_done() || !parser.is_done())
    return refuse(WebSocketHandshakeErrc::malformed_head, 400, "Bad Request");
  const auto& request = parser.get();
  if (request.version() != 11) return refuse(WebSocketHandshakeErrc::malformed_head, 400, "Bad Request");
  if (request.method() != http::verb::get)
    return refuse(WebSocketHandshakeErrc::not_get, 405, "Method Not Allowed", "Allow: GET\r\n");
  if (!has_token(request[http::field::upgrade], "websocket") || !has_token(request[http::field::connection], "upgrade"))
    return refuse(WebSocketHandshakeErrc::not_an_upgrade, 400, "Bad Request");
  if (request.find(http::field::host) == request.end()) return refuse(WebSocketHandshakeErrc::no_host, 400, "Bad Request");
  // RFC 6455 11.3.1, 11.3.5: each at most once (a second one is not a list to pick from).
  if (request.count(http::field::sec_websocket_version) != 1 || request[http::field::sec_websocket_version] != "13")
    return refuse(WebSocketHandshakeErrc::bad_version, 426, "Upgrade Required", "Sec-WebSocket-Version: 13\r\n");
  const std::string key(request[http::field::sec_websocket_key]);
  if (request.count(http::field::sec_websocket_key) != 1 || !is_key(key)) return refuse(WebSocketHandshakeErrc::bad_key, 400, "Bad Request");
  if (!accept_target.empty() && request.target() != accept_target)
    return refuse(WebSocketHandshakeErrc::unknown_target, 404, "Not Found");
  return {fmt::format("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Accept: {}\r\n\r\n",
                      websocket_accept_key(key)),
          {}};
}

std::string make_client_key() {
  std::array<unsigned char, 16> nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) throw std::runtime_error("websocket: no randomness");
  return base64(nonce.data(), nonce.size());
}

std::string make_upgrade_request(const std::string& host, const std::string& target, const std::string& key) {
  return fmt::format("GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\n\r\n",
                     target, host, key);
}

std::error_code check_upgrade_response(std::string_view head, const std::string& key) {
  http::response_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(kMaxHttpHead));
  parser.skip(true);  // the head is all there is to read here
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(head.data(), head.size()), ec);
  if (ec || !parser.is_header_done()) return make_error_code(WebSocketHandshakeErrc::malformed_head);
  const auto& response = parser.get();
  if (response.result_int() != 101) return make_error_code(WebSocketHandshakeErrc::refused);
  if (!has_token(response[http::field::upgrade], "websocket") || !has_token(response[http::field::connection], "upgrade"))
    return make_error_code(WebSocketHandshakeErrc::not_an_upgrade);
  if (response[http::field::sec_websocket_accept] != websocket_accept_key(key))
    return make_error_code(WebSocketHandshakeErrc::bad_accept);
  return {};
}

}  // namespace detail
}  // namespace volley::net
