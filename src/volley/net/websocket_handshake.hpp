#pragma once
// The WebSocket opening handshake (RFC 6455, section 4) as text in, text out:
// the client's upgrade request, the server's check of it and its answer, the
// client's check of that answer. No socket: the transport moves the bytes.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace volley::net::detail {

// A request or response head longer than this is refused (431).
inline constexpr std::size_t kMaxHttpHead = 8 * 1024;

// The size of the HTTP head at the start of `bytes`, its blank line
// included; 0 while the blank line has not arrived.
std::size_t http_head_size(std::span<const std::byte> bytes) noexcept;

struct UpgradeAnswer {
  std::string response;  // 101 Switching Protocols, or the error status to send before closing
  std::error_code error;
};
// Checks a client's upgrade request head. `accept_target` empty: any target.
UpgradeAnswer answer_upgrade(std::string_view head, const std::string& accept_target);
// The answer to a head that grew past kMaxHttpHead without ending.
UpgradeAnswer answer_oversize_head();

// 16 random bytes in base64: a client's Sec-WebSocket-Key.
std::string make_client_key();
std::string make_upgrade_request(const std::string& host, const std::string& target, const std::string& key);
// Checks the server's answer to a request made with `key`.
std::error_code check_upgrade_response(std::string_view head, const std::string& key);

}  // namespace volley::net::detail
