#pragma once
/// @file
/// WebSocket (RFC 6455) as a StreamTransport, so any TcpConnection, and any
/// Session or protocol on it, can be reached by a WebSocket client (a
/// browser, a load tool) and can reach a WebSocket server: the HTTP upgrade
/// as the transport's handshake, then binary messages both ways. Over plain
/// TCP (ws) or over TLS (wss: the TLS transport underneath).
///
/// Incoming messages are handed up as a byte stream (the protocol on top
/// frames its own messages, as it does over TCP). Outgoing bytes become one
/// binary message per write, or, given `message_size`, one message per
/// protocol frame (a gNB or checked frame per WebSocket message, as a browser
/// client expects), or, with `mirror_incoming_messages`, messages as long as
/// the incoming ones (an echo returns each message whole). Pings are
/// answered, a close is answered and ends the stream, and a peer that breaks
/// the protocol gets the RFC's close code and the connection ends with the error.
///
/// Keepalive is RFC 6455's, which browsers answer by themselves: the
/// connection's idle check and a session's heartbeat send pings
/// (send_keepalive), and a pong counts as hearing from the peer. A connection
/// this end closes gets a close frame first, its code saying why
/// (goodbye_code()), its reason the detail ("idle timeout: no byte either way for 30000 ms").
///
/// One peer cannot hold its loop: a read turn decodes at most
/// kMaxReadTurn bytes of frames before the loop's other connections run, and
/// frames that make work without data (more than
/// wire::websocket::kMaxEmptyFramesInARow empty data frames in a row, more than
/// kMaxPingsPerSecond pings and pongs) are a flood: closed with 1008, counted in
/// WebSocketStats::floods.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <system_error>

#include <volley/net/stream_transport.hpp>

namespace volley::net {

enum class WebSocketRole { client, server };

/// Wire bytes of frames one read turn decodes at most, before yielding to the loop.
inline constexpr std::size_t kMaxReadTurn = 256 * 1024;
/// Pings and pongs a peer may send in one second, counted from the first of the second.
inline constexpr std::uint32_t kMaxPingsPerSecond = 100;
/// With mirror_incoming_messages: messages received whose echo has not gone
/// out yet; a peer past it (tiny messages, never reading) is closed with 1008.
inline constexpr std::size_t kMaxUnansweredMessages = 64 * 1024;

/// The close code sent for each reason this end closes (StreamTransport::say_goodbye):
/// done 1000, going_away (the server stops) 1001, peer_silent (no message or
/// pong within the heartbeat limit) 1008, idle (no byte either way, pings
/// unanswered) 1000, slow_consumer (the peer does not read) 1008, bad_input
/// (the protocol on top refused a message) 1008.
std::uint16_t goodbye_code(StreamTransport::Goodbye why) noexcept;

/// Counted across the transports that share it (a server's connections).
struct WebSocketStats {
  /// Peers closed with 1008 for frames that carry nothing or pings beyond the rate.
  std::atomic<std::uint64_t> floods{0};
};

/// How a WebSocket transport talks.
struct WebSocketOptions {
  /// Client: the Host header and the request target of the upgrade request.
  std::string host = "localhost";
  std::string target = "/";
  /// Server: the only request target accepted (others get 404); empty: any.
  std::string accept_target;
  /// Longest message accepted from the peer; a longer one is refused with close code 1009.
  std::uint64_t max_message_size = 16u << 20;
  /// Outgoing message boundaries. Given the bytes written and not yet sent as
  /// a message, returns the size of the whole protocol frame at their start,
  /// or 0 while it is not complete. Empty: each write (at most 1 MiB) is a message.
  std::function<std::size_t(std::span<const std::byte>)> message_size;
  /// Outgoing messages as long as the incoming ones were, in order (instead of
  /// message_size): for a server that sends back what it receives, so each
  /// message comes back whole however its bytes were read and written. At
  /// most kMaxUnansweredMessages may wait for their echo (more: closed, 1008).
  bool mirror_incoming_messages = false;
  /// Where floods are counted; null: nowhere.
  std::shared_ptr<WebSocketStats> stats;
};

/// Why an upgrade failed (the connection closes with handshake_failed and this message).
enum class WebSocketHandshakeErrc {
  request_too_large = 1,  ///< a request or response head over 8 KiB (431)
  malformed_head,         ///< not an HTTP/1.1 head (400)
  not_get,                ///< a method other than GET (405)
  not_an_upgrade,         ///< no "Upgrade: websocket" and "Connection: Upgrade" (400)
  no_host,                ///< no Host header (400)
  bad_version,            ///< Sec-WebSocket-Version other than one value of 13 (426)
  bad_key,                ///< Sec-WebSocket-Key missing, repeated, or not 16 bytes in base64 (400)
  unknown_target,         ///< a request target the server does not serve (404)
  refused,                ///< the server did not answer 101 Switching Protocols
  bad_accept,             ///< the server's Sec-WebSocket-Accept does not match the key
  closed,                 ///< the peer closed before the upgrade completed
};
const std::error_category& websocket_handshake_category() noexcept;
inline std::error_code make_error_code(WebSocketHandshakeErrc e) noexcept {
  return {static_cast<int>(e), websocket_handshake_category()};
}

/// The Sec-WebSocket-Accept value for a client's Sec-WebSocket-Key (RFC 6455, 4.2.2).
std::string websocket_accept_key(const std::string& client_key);

/// One connection's WebSocket. `tls`: a TLS transport to run it over (wss);
/// null: straight on the socket (ws).
std::unique_ptr<StreamTransport> make_websocket_transport(WebSocketRole role, WebSocketOptions options,
                                                          std::unique_ptr<StreamTransport> tls = nullptr);

}  // namespace volley::net

/// @cond TRAITS
template <>
struct std::is_error_code_enum<volley::net::WebSocketHandshakeErrc> : std::true_type {};
/// @endcond
