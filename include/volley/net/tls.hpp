#pragma once
// TLS for Volley connections: OpenSSL contexts, and a StreamTransport that
// runs OpenSSL straight on a connection's socket (no extra buffer between
// them), so any TcpConnection, and any Session or protocol on it, can run over
// TLS. The client verifies the server's certificate chain and name by default;
// turning that off is the caller's explicit choice (and should be said loudly).
#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include <volley/net/stream_transport.hpp>

namespace volley::net {

enum class TlsVersion { any, tls12, tls13 };

// Throws boost::system::system_error with OpenSSL's reason when a file is
// unusable. `client_ca_file` set: mutual TLS, every client must present a
// certificate signed by that CA.
boost::asio::ssl::context make_tls_server_context(const std::string& certificate_chain_file,
                                                  const std::string& private_key_file,
                                                  const std::string& client_ca_file = {});
// `ca_file` empty: the system's default trust store.
boost::asio::ssl::context make_tls_client_context(const std::string& ca_file, bool verify, TlsVersion version);
// The certificate a client presents to a server that asks for one (mutual TLS).
void use_tls_client_certificate(boost::asio::ssl::context& context, const std::string& certificate_chain_file,
                                const std::string& private_key_file);

enum class TlsRole { client, server };

// One connection's TLS. The context must be configured before and is shared
// (OpenSSL counts its references). A client checks the server's certificate
// against `server_name` (a DNS name or an IP address; also sent as SNI when a
// name) whenever the context verifies peers.
std::unique_ptr<StreamTransport> make_tls_transport(boost::asio::ssl::context& context, TlsRole role,
                                                    const std::string& server_name = {});

}  // namespace volley::net
