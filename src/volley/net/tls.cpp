#include <volley/net/tls.hpp>

#include <openssl/ssl.h>

namespace volley::net {

namespace ssl = boost::asio::ssl;

ssl::context make_tls_server_context(const std::string& certificate_chain_file, const std::string& private_key_file) {
  ssl::context ctx(ssl::context::tls_server);
  // TLS 1.2 and 1.3 only; older versions and compression stay off.
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression | ssl::context::single_dh_use);
  ctx.use_certificate_chain_file(certificate_chain_file);
  ctx.use_private_key_file(private_key_file, ssl::context::pem);
  return ctx;
}

ssl::context make_tls_client_context(const std::string& ca_file, bool verify, TlsVersion version) {
  ssl::context ctx(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), version == TlsVersion::tls13 ? TLS1_3_VERSION : TLS1_2_VERSION);
  if (version == TlsVersion::tls12) SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  if (version == TlsVersion::tls13) SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_3_VERSION);
  if (!verify) {
    ctx.set_verify_mode(ssl::verify_none);
    return ctx;
  }
  ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  if (ca_file.empty()) {
    ctx.set_default_verify_paths();
  } else {
    ctx.load_verify_file(ca_file);
  }
  return ctx;
}

}  // namespace volley::net
