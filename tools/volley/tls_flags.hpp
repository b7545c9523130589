#pragma once
// TLS on any TCP program, one set of flags: a server gets --tls with its
// certificate and key (and optionally --client-ca for mutual TLS); a client
// gets --tls, verifying the server against --ca (or the system's store) by
// default, with --insecure as the loud exception.
#include <functional>
#include <memory>
#include <string>

#include <volley/net/server.hpp>
#include <volley/net/stream_transport.hpp>

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

}  // namespace volley::tools
