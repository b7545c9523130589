#pragma once
// OpenSSL contexts for Asio TLS streams. The client verifies the server's
// certificate chain and name by default; turning that off is the caller's
// explicit choice (and should be said loudly).
#include <string>

#include <boost/asio/ssl/context.hpp>

namespace volley::net {

enum class TlsVersion { any, tls12, tls13 };

// Throws boost::system::system_error with OpenSSL's reason when a file is unusable.
boost::asio::ssl::context make_tls_server_context(const std::string& certificate_chain_file,
                                                  const std::string& private_key_file);
// `ca_file` empty: the system's default trust store.
boost::asio::ssl::context make_tls_client_context(const std::string& ca_file, bool verify, TlsVersion version);

}  // namespace volley::net
