#pragma once
// TLS and WebSocket on any TCP program, one set of flags: a server gets --tls
// with its certificate and key (and optionally --client-ca for mutual TLS); a
// client gets --tls, verifying the server against --ca (or the system's
// store) by default, with --insecure as the loud exception. Either gets --ws:
// the protocol's frames travel as WebSocket binary messages (over TLS too,
// with both).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include <volley/net/server.hpp>
#include <volley/net/stream_transport.hpp>
#include <volley/net/websocket.hpp>

namespace CLI {
class App;
}

namespace volley::tools {

struct TlsServerFlags {
  bool tls = false;
  std::string cert, key, client_ca;
  double handshake_timeout_s = 5;
};

// Adds --tls, --cert, --key, --client-ca and --handshake-timeout.
void add_tls_server_flags(CLI::App& cmd, TlsServerFlags& flags);
// With --tls: every connection of `options` runs TLS (the context lives in the
// transport factory) under the handshake deadline. Throws std::runtime_error
// for a missing certificate or key, boost::system::system_error for an unusable one.
void apply_tls(net::ServerOptions& options, const TlsServerFlags& flags);

struct TlsClientFlags {
  bool tls = false;
  std::string ca;
  bool insecure = false;
  std::string version = "any";
  std::string cert, key;  // mutual TLS: the certificate this client presents
};

// Adds --tls, --ca, --insecure, --tls-version, --cert and --key.
void add_tls_client_flags(CLI::App& cmd, TlsClientFlags& flags);

using TransportFactory = std::function<std::unique_ptr<net::StreamTransport>()>;
// Empty without --tls; otherwise a factory of client transports that verify
// the server as `server_name` (unless --insecure, which is logged as a warning).
TransportFactory tls_client_transport(const TlsClientFlags& flags, const std::string& server_name);

// Where a protocol's outgoing bytes split into frames (one WebSocket message
// each): the size of the whole frame at the start of `bytes`, 0 while incomplete.
using FrameSize = std::function<std::size_t(std::span<const std::byte>)>;

struct WebSocketFlags {
  bool ws = false;
  std::string path = "/";                       // client: the request target; server: the only one served
  std::uint64_t max_message = 16u << 20;        // longest message taken from the peer
  bool echo_messages = false;                   // not a flag: a server echoing its input sends each message back whole
  // A server's connections count floods here (shared by copies of the flags).
  std::shared_ptr<net::WebSocketStats> stats = std::make_shared<net::WebSocketStats>();
};

// Adds --ws, --ws-path and --ws-max-message.
void add_websocket_flags(CLI::App& cmd, WebSocketFlags& flags);
// With --ws: every connection of `options` upgrades to WebSocket first (over
// the TLS transport apply_tls set, if any), one message per frame `frame_size` finds.
void apply_websocket(net::ServerOptions& options, const WebSocketFlags& flags, FrameSize frame_size = {});
// With --ws: client transports that upgrade to WebSocket (over `tls`, if set).
TransportFactory websocket_client_transport(TransportFactory tls, const WebSocketFlags& flags,
                                            const std::string& host, std::uint16_t port, FrameSize frame_size = {});
// --shm and --shm-spin (listening.hpp adds them).
struct ShmFlags {
  bool on = false;
  double spin_s = 10e-6;  // net::ShmOptions::spin_before_sleep
};
// With --shm: client transports that move the bytes through shared memory
// (net/shm.hpp) on the --unix socket `address`. Throws std::runtime_error
// without --unix, or with another transport (`other`: --tls, --ws).
TransportFactory shm_client_transport(const ShmFlags& shm, const std::string& address, TransportFactory other);
// The same for a server: with --shm, `options` serve shared memory on their
// Unix socket (throws as above).
void apply_shm(net::ServerOptions& options, const ShmFlags& shm);

// The listening line's protocol: tcp, tls, ws or wss.
std::string listening_proto(bool tls, const WebSocketFlags& flags);

}  // namespace volley::tools
