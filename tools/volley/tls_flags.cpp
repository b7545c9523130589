#include "tls_flags.hpp"

#include "duration_flag.hpp"

#include <stdexcept>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <volley/net/shm.hpp>
#include <volley/net/tls.hpp>
#include <volley/net/unix_socket.hpp>
#include <volley/net/websocket.hpp>

namespace volley::tools {

namespace ssl = boost::asio::ssl;

void add_tls_server_flags(CLI::App& cmd, TlsServerFlags& flags) {
  cmd.add_flag("--tls", flags.tls, "Serve over TLS 1.2/1.3 (needs --cert and --key)");
  cmd.add_option("--cert", flags.cert, "TLS: certificate chain file (PEM, the server's first)")->type_name("FILE");
  cmd.add_option("--key", flags.key, "TLS: private key file (PEM)")->type_name("FILE");
  cmd.add_option("--client-ca", flags.client_ca, "TLS: require a client certificate signed by this CA (mutual TLS)")
      ->type_name("FILE");
  add_duration_option(cmd, "--handshake-timeout", flags.handshake_timeout_s,
                      "TLS: time a connection has to finish its handshake before it is closed and counted", 0.001,
                      3600.0);
}

void apply_tls(net::ServerOptions& options, const TlsServerFlags& flags) {
  if (!flags.tls) {
    if (!flags.cert.empty() || !flags.key.empty() || !flags.client_ca.empty())
      throw std::runtime_error("--cert, --key and --client-ca are for TLS only");
    return;
  }
  if (flags.cert.empty() || flags.key.empty())
    throw std::runtime_error("TLS needs --cert and --key (scripts/make-test-certs.sh makes a throw-away pair)");
  auto context = std::make_shared<ssl::context>(net::make_tls_server_context(flags.cert, flags.key, flags.client_ca));
  spdlog::info("{}", net::tls_record_layer_text());
  options.transport = [context] { return net::make_tls_transport(*context, net::TlsRole::server); };
  options.connection_limits.handshake_timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(flags.handshake_timeout_s * 1000));
}

namespace {

void check_shm(const std::string& address, bool other_transport) {
  if (!net::parse_unix_address(address))
    throw std::runtime_error("--shm needs --unix: the shared memory is set up over a Unix socket");
  if (other_transport) throw std::runtime_error("--shm moves the bytes itself: not with --tls or --ws");
}

net::ShmOptions shm_options(const ShmFlags& flags) {
  net::ShmOptions options;
  options.spin_before_sleep = std::chrono::nanoseconds(static_cast<std::int64_t>(flags.spin_s * 1e9));
  return options;
}

}  // namespace

TransportFactory shm_client_transport(const ShmFlags& shm, const std::string& address, TransportFactory other) {
  if (!shm.on) return other;
  check_shm(address, static_cast<bool>(other));
  return [options = shm_options(shm)] { return net::make_shm_transport(net::ShmRole::client, options); };
}

void apply_shm(net::ServerOptions& options, const ShmFlags& shm) {
  if (!shm.on) return;
  check_shm(options.bind, static_cast<bool>(options.transport));
  options.transport = [o = shm_options(shm)] { return net::make_shm_transport(net::ShmRole::server, o); };
}

void add_tls_client_flags(CLI::App& cmd, TlsClientFlags& flags) {
  cmd.add_flag("--tls", flags.tls, "Connect over TLS, verifying the server's certificate and name");
  cmd.add_option("--ca", flags.ca, "TLS: CA certificate file to verify the server with")
      ->type_name("FILE")
      ->default_str("the system's");
  cmd.add_flag("--insecure", flags.insecure, "TLS: do not verify the server's certificate (says so loudly)");
  cmd.add_option("--tls-version", flags.version, "TLS: the versions offered (any: 1.2 or 1.3)")
      ->option_text("any|1.2|1.3")
      ->capture_default_str()
      ->check(CLI::IsMember({"any", "1.2", "1.3"}));
  cmd.add_option("--cert", flags.cert, "TLS: client certificate chain to present (mutual TLS)")->type_name("FILE");
  cmd.add_option("--key", flags.key, "TLS: the client certificate's private key")->type_name("FILE");
}

TransportFactory tls_client_transport(const TlsClientFlags& flags, const std::string& server_name) {
  if (!flags.tls) {
    if (!flags.ca.empty() || flags.insecure || !flags.cert.empty() || !flags.key.empty())
      throw std::runtime_error("--ca, --insecure, --cert and --key need --tls");
    return {};
  }
  if (flags.cert.empty() != flags.key.empty()) throw std::runtime_error("--cert and --key go together");
  if (flags.insecure)
    spdlog::warn("--insecure: the server's certificate is NOT verified; anyone in the path can read and change the traffic");
  const net::TlsVersion version = flags.version == "1.2"   ? net::TlsVersion::tls12
                                  : flags.version == "1.3" ? net::TlsVersion::tls13
                                                           : net::TlsVersion::any;
  auto context = std::make_shared<ssl::context>(net::make_tls_client_context(flags.ca, !flags.insecure, version));
  if (!flags.cert.empty()) net::use_tls_client_certificate(*context, flags.cert, flags.key);
  return [context, server_name] { return net::make_tls_transport(*context, net::TlsRole::client, server_name); };
}

void add_websocket_flags(CLI::App& cmd, WebSocketFlags& flags) {
  cmd.add_flag("--ws", flags.ws, "Carry the protocol over WebSocket (RFC 6455): each frame one binary message (with --tls: wss)");
  cmd.add_option("--ws-path", flags.path, "WebSocket: the request target (a server serves only this one)")
      ->type_name("PATH")
      ->capture_default_str();
  cmd.add_option("--ws-max-message", flags.max_message,
                 "WebSocket: longest message accepted from the peer (longer: closed with code 1009)")
      ->type_name("BYTES")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
}

void apply_websocket(net::ServerOptions& options, const WebSocketFlags& flags, FrameSize frame_size) {
  if (!flags.ws) return;
  net::WebSocketOptions ws{.host = {}, .target = {}, .accept_target = flags.path, .max_message_size = flags.max_message,
                           .message_size = std::move(frame_size), .mirror_incoming_messages = flags.echo_messages,
                           .stats = flags.stats};
  auto tls = options.transport;  // empty for ws, the TLS factory for wss
  options.transport = [ws, tls] {
    return net::make_websocket_transport(net::WebSocketRole::server, ws, tls ? tls() : nullptr);
  };
  if (options.connection_limits.handshake_timeout.count() == 0)
    options.connection_limits.handshake_timeout = std::chrono::seconds(5);
}

TransportFactory websocket_client_transport(TransportFactory tls, const WebSocketFlags& flags, const std::string& host,
                                            std::uint16_t port, FrameSize frame_size) {
  if (!flags.ws) return tls;
  const bool default_port = port == (tls ? 443 : 80);
  const bool ipv6 = host.find(':') != std::string::npos;
  const std::string authority = (ipv6 ? "[" + host + "]" : host) + (default_port ? "" : ":" + std::to_string(port));
  net::WebSocketOptions ws{.host = authority, .target = flags.path, .accept_target = {},
                           .max_message_size = flags.max_message, .message_size = std::move(frame_size),
                           .mirror_incoming_messages = false, .stats = flags.stats};
  return [ws, tls] { return net::make_websocket_transport(net::WebSocketRole::client, ws, tls ? tls() : nullptr); };
}

std::string listening_proto(bool tls, const WebSocketFlags& flags) {
  if (flags.ws) return tls ? "wss" : "ws";
  return tls ? "tls" : "tcp";
}

}  // namespace volley::tools
