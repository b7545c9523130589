// TLS contexts (server, client, resumption callback) and the TLS transport:
// OpenSSL over the socket through a BIO of Volley's own (tls_socket_bio),
// records batched into one send. The kernel TLS probe is in kernel_tls.cpp,
// a client's kept session in tls_session_cache.cpp.
#include <volley/net/tls.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <optional>
#include <stdexcept>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>

#include "tls_socket_bio.hpp"

namespace volley::net {

namespace ssl = boost::asio::ssl;
namespace asio = boost::asio;

namespace {

// OpenSSL fills a certificate's extension cache on first use. Two handshakes
// on different threads that verify against the same certificate for the first
// time can both fill it: the second rewrites the cached fields while the first
// reads them (a data race inside OpenSSL 3, seen by ThreadSanitizer with one
// client context shared by several loops). Filling it here, before the
// context is shared, leaves the handshakes only reads; for the same reason
// the trust store is walked here without its lock. (Certificates a default
// verify path loads lazily are not covered.)
void cache_certificate_extensions(SSL_CTX* ctx) {
  if (X509* own = SSL_CTX_get0_certificate(ctx)) X509_get_extension_flags(own);
  STACK_OF(X509)* chain = nullptr;
  if (SSL_CTX_get0_chain_certs(ctx, &chain) == 1 && chain != nullptr)
    for (int i = 0; i < sk_X509_num(chain); ++i) X509_get_extension_flags(sk_X509_value(chain, i));
  if (X509_STORE* store = SSL_CTX_get_cert_store(ctx)) {
    STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(store);
    for (int i = 0; i < sk_X509_OBJECT_num(objects); ++i)
      if (X509* x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objects, i))) X509_get_extension_flags(x);
  }
}

// The client contexts' new-session callback (below, with the transport).
int on_new_session(SSL* ssl, SSL_SESSION* session);

// Where a connection's SSL points back at its TlsTransport: an ex_data slot
// of Volley's own. Not SSL's app data: the same client context may run Asio's
// ssl::stream, which keeps its verify callback there.
int transport_slot() {
  static const int slot = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}

// Every client context lets its connections keep the sessions servers issue
// (TlsSessionCache); OpenSSL's own client cache stays unused (sessions are
// kept per server by the caller, not per context).
void enable_session_callback(SSL_CTX* ctx) {
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &on_new_session);
}

}  // namespace

ssl::context make_tls_server_context(const std::string& certificate_chain_file, const std::string& private_key_file,
                                     const std::string& client_ca_file) {
  ssl::context ctx(ssl::context::tls_server);
  // TLS 1.2 and 1.3 only; older versions, compression and renegotiation stay off.
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.native_handle(), SSL_OP_NO_RENEGOTIATION);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression | ssl::context::single_dh_use);
  ctx.use_certificate_chain_file(certificate_chain_file);
  ctx.use_private_key_file(private_key_file, ssl::context::pem);
  if (!client_ca_file.empty()) {
    ctx.load_verify_file(client_ca_file);
    ctx.set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  cache_certificate_extensions(ctx.native_handle());
  return ctx;
}

ssl::context make_tls_client_context(const std::string& ca_file, bool verify, TlsVersion version) {
  ssl::context ctx(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), version == TlsVersion::tls13 ? TLS1_3_VERSION : TLS1_2_VERSION);
  if (version == TlsVersion::tls12) SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  if (version == TlsVersion::tls13) SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_3_VERSION);
  SSL_CTX_set_options(ctx.native_handle(), SSL_OP_NO_RENEGOTIATION);
  enable_session_callback(ctx.native_handle());
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
  cache_certificate_extensions(ctx.native_handle());
  return ctx;
}

void use_tls_client_certificate(ssl::context& context, const std::string& certificate_chain_file,
                                const std::string& private_key_file) {
  context.use_certificate_chain_file(certificate_chain_file);
  context.use_private_key_file(private_key_file, ssl::context::pem);
  cache_certificate_extensions(context.native_handle());
}

namespace {

// SSL_get_error needs an empty error queue before each call. Emptying it
// costs more than looking (ERR_clear_error clears every slot), and a call
// that succeeds leaves it empty: look first.
void empty_error_queue() noexcept {
  if (ERR_peek_error() != 0) ERR_clear_error();
}

// OpenSSL's error for a call that returned `result`, as an error code whose
// message is OpenSSL's reason. An end without close_notify is an eof too: the
// protocols on top frame their messages, so a cut message is still noticed.
boost::system::error_code ssl_error(SSL* ssl, int result) {
  const int err = SSL_get_error(ssl, result);
  if (err == SSL_ERROR_ZERO_RETURN) return asio::error::eof;
  const unsigned long code = ERR_get_error();
  if (err == SSL_ERROR_SYSCALL) {
    if (code == 0 && errno == 0) return asio::error::eof;
    if (code == 0) return {errno, boost::system::system_category()};
  }
  if (ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING) return asio::error::eof;
  if (code == 0) return asio::error::connection_aborted;
  return {static_cast<int>(code), asio::error::get_ssl_category()};
}

class TlsTransport final : public StreamTransport {
 public:
  // OpenSSL's read-ahead buffer: room for several records, so one receive
  // takes what a peer's batch put on the wire (the default, one record and a
  // header, means two or three receives for a 32 KiB batch).
  static constexpr std::size_t kReadBuffer = 64 * 1024;

  TlsTransport(ssl::context& context, TlsRole role, const std::string& server_name,
               std::shared_ptr<TlsSessionCache> sessions)
      : ssl_(SSL_new(context.native_handle())), sessions_(role == TlsRole::client ? std::move(sessions) : nullptr) {
    if (ssl_ == nullptr) throw std::runtime_error("TLS: SSL_new failed");
    // A write that blocks after some records went out reports them (partial
    // writes), and its retry may come from a buffer that moved. OpenSSL's
    // record buffers go back to the allocator once empty: a loop serving many
    // connections then reuses the few that are warm in its cache instead of
    // touching every connection's 64 KiB + 17 KiB (issue 38's 100 clients).
    SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    // Read what the socket has in one call, not a record header and then its
    // body (two system calls per record).
    SSL_set_read_ahead(ssl_, 1);
    SSL_set_default_read_buffer_len(ssl_, kReadBuffer);
    if (role == TlsRole::server) {
      SSL_set_accept_state(ssl_);
      return;
    }
    SSL_set_connect_state(ssl_);
    if (sessions_) {
      if (SSL_CTX_sess_get_new_cb(context.native_handle()) != &on_new_session) {
        SSL_free(ssl_);
        throw std::invalid_argument("TLS session cache: make the client context with make_tls_client_context");
      }
      if (transport_slot() < 0 || SSL_set_ex_data(ssl_, transport_slot(), this) != 1) {
        SSL_free(ssl_);
        throw std::runtime_error("TLS: SSL_set_ex_data failed");
      }
      if (SSL_SESSION* kept = sessions_->acquire()) {
        SSL_set_session(ssl_, kept);  // takes a reference of its own
        SSL_SESSION_free(kept);
      }
    }
    if (server_name.empty()) return;
    boost::system::error_code not_ip;
    asio::ip::make_address(server_name, not_ip);
    if (not_ip) {
      SSL_set_tlsext_host_name(ssl_, server_name.c_str());
      SSL_set1_host(ssl_, server_name.c_str());
    } else {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), server_name.c_str());
    }
  }
  ~TlsTransport() override { SSL_free(ssl_); }
  TlsTransport(const TlsTransport&) = delete;
  TlsTransport& operator=(const TlsTransport&) = delete;

  void attach(int fd) override {
    bio_.emplace(fd);
    BIO* bio = bio_->make_bio();
    SSL_set_bio(ssl_, bio, bio);  // the SSL owns it (one reference for both directions)
  }

  Wait handshake(boost::system::error_code& ec) override {
    ERR_clear_error();
    errno = 0;
    const int r = SSL_do_handshake(ssl_);
    if (r == 1) {
      resumed_ = SSL_session_reused(ssl_) == 1;
      return Wait::none;
    }
    const int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ) return Wait::read;
    if (err == SSL_ERROR_WANT_WRITE) return Wait::write;
    ec = ssl_error(ssl_, r);
    if (ec == asio::error::eof) ec = asio::error::connection_reset;  // a peer gone mid-handshake
    return Wait::none;
  }

  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    if (end_) {
      ec = *end_;
      return 0;
    }
    blocked_ = Wait::none;
    bio_->forget_dry();  // a read served from OpenSSL's buffer alone says nothing of the socket now
    std::size_t total = 0;
    // OpenSSL hands out one record per call: read until the buffer is full or
    // the socket is drained, so a short read means "nothing more until the next edge".
    while (total < buffer.size()) {
      empty_error_queue();
      errno = 0;
      const int r = SSL_read(ssl_, buffer.data() + total, chunk(buffer.size() - total));
      if (r > 0) {
        total += static_cast<std::size_t>(r);
        // The socket came up short and OpenSSL holds nothing more: another
        // receive would only say EAGAIN. (The next edge announces new input.)
        if (bio_->drained() && SSL_has_pending(ssl_) == 0) break;
        continue;
      }
      const int err = SSL_get_error(ssl_, r);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        blocked_ = err == SSL_ERROR_WANT_READ ? Wait::read : Wait::write;
        break;
      }
      // The end (or a failure) after some bytes: hand the bytes out now, the end next time.
      end_ = ssl_error(ssl_, r);
      break;
    }
    if (total == 0) {
      if (end_) {
        ec = *end_;
      } else {
        ec = asio::error::would_block;
      }
    }
    return total;
  }

  // The records of one call are batched and sent with one system call; what
  // the socket does not take waits in the BIO (has_buffered_output) and goes
  // first on the next call, before anything new is encrypted.
  std::size_t write_some(std::span<const asio::const_buffer> buffers, boost::system::error_code& ec) override {
    blocked_ = Wait::none;
    if (bio_->pending_output() > 0 && !bio_->flush(ec)) {
      if (!ec) {
        blocked_ = Wait::write;
        ec = asio::error::would_block;
      }
      return 0;
    }
    // OpenSSL makes each buffer's records apart, full ones first.
    std::size_t records = 0, bytes = 0;
    for (const asio::const_buffer& b : buffers) {
      records += (b.size() + SSL3_RT_MAX_PLAIN_LENGTH - 1) / SSL3_RT_MAX_PLAIN_LENGTH;
      bytes += b.size();
    }
    bio_->begin_batch(records, bytes);
    const std::size_t total = encrypt(buffers, ec);
    bio_->end_batch();
    boost::system::error_code send_error;
    if (!bio_->flush(send_error)) {
      if (send_error) {
        if (total == 0 && !ec) ec = send_error;  // after some bytes, the next call meets the error again
      } else {
        blocked_ = Wait::write;
        if (total == 0 && !ec) ec = asio::error::would_block;
      }
    }
    return total;
  }

  bool has_buffered_output() const override { return bio_ && bio_->pending_output() > 0; }
  bool read_socket_dry() const override { return bio_ && bio_->dry(); }

 private:
  // SSL_write of every buffer into the batching BIO (which takes everything).
  std::size_t encrypt(std::span<const asio::const_buffer> buffers, boost::system::error_code& ec) {
    std::size_t total = 0;
    for (const asio::const_buffer& b : buffers) {
      const auto* p = static_cast<const unsigned char*>(b.data());
      std::size_t left = b.size();
      while (left > 0) {
        empty_error_queue();
        errno = 0;
        const int r = SSL_write(ssl_, p, chunk(left));
        if (r > 0) {
          total += static_cast<std::size_t>(r);
          p += r;
          left -= static_cast<std::size_t>(r);
          continue;
        }
        const int err = SSL_get_error(ssl_, r);
        if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) {
          blocked_ = err == SSL_ERROR_WANT_WRITE ? Wait::write : Wait::read;
          if (total == 0) ec = asio::error::would_block;
        } else if (total == 0) {
          ec = ssl_error(ssl_, r);  // after some bytes, the next call meets the error again
        }
        return total;
      }
    }
    return total;
  }


 public:
  Wait blocked_on() const override { return blocked_; }
  // With read-ahead OpenSSL may hold more than one record: SSL_has_pending
  // counts what is not yet decrypted too.
  bool has_buffered_input() const override { return end_.has_value() || SSL_has_pending(ssl_) == 1; }

  void shutdown_send() override {
    ERR_clear_error();
    if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
  }

  bool resumed_session() const override { return resumed_; }

  // A session the server issued on this connection (TLS 1.3: each ticket,
  // after the handshake; TLS 1.2: at its end).
  void issued(SSL_SESSION* session) {
    if (sessions_ && SSL_SESSION_is_resumable(session) == 1) sessions_->keep(session);
  }

  std::string describe() const override {
    return std::string(SSL_get_version(ssl_)) + " " + SSL_get_cipher_name(ssl_) + (resumed_ ? ", resumed" : "");
  }

 private:
  static int chunk(std::size_t n) noexcept { return static_cast<int>(std::min<std::size_t>(n, INT_MAX / 2)); }

  SSL* ssl_;
  std::optional<detail::TlsSocketBio> bio_;  // made by attach(), owned here, used by ssl_'s BIO
  Wait blocked_ = Wait::none;
  std::optional<boost::system::error_code> end_;
  std::shared_ptr<TlsSessionCache> sessions_;
  bool resumed_ = false;
};

// Returns 0: OpenSSL keeps its object, which it changes in place (a later
// ticket; marked not resumable when its connection ends without close_notify);
// the cache keeps a copy.
int on_new_session(SSL* ssl, SSL_SESSION* session) {
  if (auto* transport = static_cast<TlsTransport*>(SSL_get_ex_data(ssl, transport_slot()))) transport->issued(session);
  return 0;
}

}  // namespace

std::unique_ptr<StreamTransport> make_tls_transport(ssl::context& context, TlsRole role,
                                                    const std::string& server_name,
                                                    std::shared_ptr<TlsSessionCache> sessions) {
  return std::make_unique<TlsTransport>(context, role, server_name, std::move(sessions));
}

std::function<std::unique_ptr<StreamTransport>()> make_resuming_tls_transports(ssl::context& context,
                                                                               std::string server_name) {
  return [&context, server_name = std::move(server_name), sessions = std::make_shared<TlsSessionCache>()] {
    return make_tls_transport(context, TlsRole::client, server_name, sessions);
  };
}

}  // namespace volley::net
