#pragma once
// TLS for Volley connections: OpenSSL contexts, and a StreamTransport that
// runs OpenSSL straight on a connection's socket (no extra buffer between
// them), so any TcpConnection, and any Session or protocol on it, can run over
// TLS. The client verifies the server's certificate chain and name by default;
// turning that off is the caller's explicit choice (and should be said loudly).
#include <functional>
#include <memory>
#include <mutex>
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

// What this kernel offers for TLS records (kernel TLS: the `tls` upper-layer
// protocol, which would let the kernel encrypt what a send gives it), probed
// once per process: listed in /proc/sys/net/ipv4/tcp_available_ulp, or
// loadable (TCP_ULP "tls" on a loopback connection). Volley's TLS transport
// runs its records in user space (OpenSSL) on every kernel today: the probe
// is for the start-up line, which says why it is not the kernel.
struct KernelTlsProbe {
  bool available = false;
  std::string detail;  // "this kernel has no tls upper-layer protocol (tcp_available_ulp: mptcp; ...)"
};
const KernelTlsProbe& probe_kernel_tls();
// One line for a TLS program's start: who encrypts the records, and what the kernel offers.
std::string tls_record_layer_text();

// The TLS session one client resumes when it connects to the same server
// again: the last one that server issued on a connection made with this cache
// (a TLS 1.3 ticket, which arrives after the handshake with the first data
// read; or TLS 1.2's session). The next connection offers it; a server that
// cannot use it (restarted, its ticket keys changed, the ticket expired)
// answers with a full handshake, and that connection's own session replaces
// it. 0-RTT stays off: nothing is sent before the handshake finishes. One
// cache per server a client talks to (a ticket is that server's); its
// connections may run on any thread.
class TlsSessionCache {
 public:
  TlsSessionCache() = default;
  ~TlsSessionCache();
  TlsSessionCache(const TlsSessionCache&) = delete;
  TlsSessionCache& operator=(const TlsSessionCache&) = delete;

  bool has_session() const;
  // The next connection does a full handshake.
  void clear();

  // For the transport: a copy of the kept session (the caller frees it), or null.
  SSL_SESSION* acquire() const;
  // Keeps a copy of `session` in place of the one before (null: none).
  void keep(SSL_SESSION* session);

 private:
  mutable std::mutex mutex_;
  SSL_SESSION* session_ = nullptr;
};

// One connection's TLS. The context must be configured before and is shared
// (OpenSSL counts its references). A client checks the server's certificate
// against `server_name` (a DNS name or an IP address; also sent as SNI when a
// name) whenever the context verifies peers. `sessions` (clients only): offer
// the session kept there, and keep the ones this connection is issued; the
// context must be make_tls_client_context's (std::invalid_argument otherwise).
std::unique_ptr<StreamTransport> make_tls_transport(boost::asio::ssl::context& context, TlsRole role,
                                                    const std::string& server_name = {},
                                                    std::shared_ptr<TlsSessionCache> sessions = nullptr);

// Client transports to one server for one client that reconnects
// (ReconnectingClientOptions::make_transport, RpcClient::start): each
// connection resumes the session its predecessor was issued (one
// TlsSessionCache of their own). `context` must outlive the factory.
std::function<std::unique_ptr<StreamTransport>()> make_resuming_tls_transports(boost::asio::ssl::context& context,
                                                                               std::string server_name);

}  // namespace volley::net
