// A client's last TLS session, kept for its next connection to resume.
#include <volley/net/tls.hpp>

#include <openssl/ssl.h>

#include <mutex>

namespace volley::net {

TlsSessionCache::~TlsSessionCache() { SSL_SESSION_free(session_); }

bool TlsSessionCache::has_session() const {
  const std::lock_guard lock(mutex_);
  return session_ != nullptr;
}

void TlsSessionCache::clear() { keep(nullptr); }

// Copies both ways: a connection's OpenSSL changes the session it offered in
// place, and connections on other threads may offer the same one meanwhile.
SSL_SESSION* TlsSessionCache::acquire() const {
  const std::lock_guard lock(mutex_);
  return session_ != nullptr ? SSL_SESSION_dup(session_) : nullptr;
}

void TlsSessionCache::keep(SSL_SESSION* session) {
  if (session != nullptr) session = SSL_SESSION_dup(session);
  SSL_SESSION* old = nullptr;
  {
    const std::lock_guard lock(mutex_);
    old = session_;
    session_ = session;
  }
  SSL_SESSION_free(old);  // null is fine
}

}  // namespace volley::net
