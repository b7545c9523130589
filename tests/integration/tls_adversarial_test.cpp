// The abuse matrix over TLS: the same four server programs serving TLS, each
// attacked where TLS adds surface (before and during the handshake, and with
// forged records after it), while a good client works over TLS alongside.
// Abuse of the handshake must show in the server's `handshake_failures`;
// a forged record after it in the counters the TCP matrix reads.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "adversarial.hpp"
#include "target_fixture.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};
using SslCtx = std::unique_ptr<SSL_CTX, SslCtxFree>;
using Ssl = std::unique_ptr<SSL, SslFree>;

SslCtx unverifying_client_context() {
  SslCtx ctx(SSL_CTX_new(TLS_client_method()));
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);  // an attacker trusts anything
  return ctx;
}

// The bytes of a real ClientHello, as a client's first flight.
Bytes client_hello() {
  const SslCtx ctx = unverifying_client_context();
  const Ssl ssl(SSL_new(ctx.get()));
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl.get(), in, out);  // owned by the SSL from here
  SSL_connect(ssl.get());           // wants the server's answer; the hello waits in `out`
  Bytes hello(static_cast<std::size_t>(BIO_pending(out)));
  EXPECT_EQ(BIO_read(out, hello.data(), static_cast<int>(hello.size())), static_cast<int>(hello.size()));
  EXPECT_GT(hello.size(), 100u);
  return hello;
}

// A TLS client over an Abuser's socket: a real handshake (bounded by 5 s
// socket timeouts), then whatever the abuse does with the session or the
// socket under it.
class TlsAbuser {
 public:
  explicit TlsAbuser(int port) : raw_(port), ctx_(unverifying_client_context()), ssl_(SSL_new(ctx_.get())) {
    const timeval five{5, 0};
    ::setsockopt(raw_.fd(), SOL_SOCKET, SO_RCVTIMEO, &five, sizeof five);
    ::setsockopt(raw_.fd(), SOL_SOCKET, SO_SNDTIMEO, &five, sizeof five);
    SSL_set_fd(ssl_.get(), raw_.fd());
    handshaken_ = raw_.connected() && SSL_connect(ssl_.get()) == 1;
  }

  bool handshaken() const { return handshaken_; }
  Abuser& raw() { return raw_; }

  // Writes `bytes` again and again for `how_long` and never reads.
  void write_without_reading(const Bytes& bytes, std::chrono::milliseconds how_long) {
    ::fcntl(raw_.fd(), F_SETFL, ::fcntl(raw_.fd(), F_GETFL) | O_NONBLOCK);
    const auto until = Clock::now() + how_long;
    while (Clock::now() < until) {
      const int n = SSL_write(ssl_.get(), bytes.data(), static_cast<int>(bytes.size()));
      if (n > 0) continue;
      if (SSL_get_error(ssl_.get(), n) != SSL_ERROR_WANT_WRITE) return;
      std::this_thread::sleep_for(1ms);  // retried with the same bytes, as OpenSSL requires
    }
  }

 private:
  Abuser raw_;
  SslCtx ctx_;
  Ssl ssl_;
  bool handshaken_ = false;
};

std::vector<LayerAbuse> tls_abuses() {
  return {
      {{"garbage_for_a_hello", true,
        [](int port, const Subject&) {
          for (unsigned i = 0; i < 8; ++i) {
            Abuser a(port);
            a.send(garbage(16 * 1024, i));
            a.read_some(1024, 100ms);  // the alert, or the close
          }
        }},
       true},
      {{"lying_record_length", true,
        [](int port, const Subject&) {
          Bytes record{std::byte{0x16}, std::byte{0x03}, std::byte{0x01}, std::byte{0xFF}, std::byte{0xFF}};
          record.resize(record.size() + 100, std::byte{0});  // a handshake record "of 65535 bytes"
          for (int i = 0; i < 4; ++i) {
            Abuser a(port);
            a.send(record);
            a.read_some(1024, 100ms);
          }
        }},
       true},
      {{"hello_byte_by_byte", false,
        [](int port, const Subject& s) {
          const Bytes hello = client_hello();
          for (int i = 0; i < 2; ++i) {
            Abuser a(port);
            for (std::byte b : hello) {
              a.send(std::span(&b, 1));
              std::this_thread::sleep_for(1ms);
            }
            // A hello that arrives a byte at a time is still a hello: the server answers it
            // with its own (a handshake record, 0x16), not an alert (0x15).
            const Bytes answer = a.read_bytes(1, 5000ms);
            ASSERT_EQ(answer.size(), 1u) << s.name << ": no answer to a hello sent byte by byte";
            EXPECT_EQ(answer[0], std::byte{0x16}) << s.name << ": the hello sent byte by byte was refused";
          }
        }},
       true},
      {{"reset_mid_handshake", true,
        [](int port, const Subject&) {
          const Bytes hello = client_hello();
          for (int i = 0; i < 8; ++i) {
            Abuser a(port);
            a.send(std::span(hello).first(hello.size() / 2));
            std::this_thread::sleep_for(5ms);
            a.reset();
          }
        }},
       true},
      {{"slowloris_hellos", false,
        [](int port, const Subject&) {
          const Bytes hello = client_hello();
          std::vector<Abuser> slow;
          for (int i = 0; i < 100; ++i) slow.emplace_back(port);
          for (std::size_t byte = 0; byte < 10; ++byte) {
            for (auto& a : slow) a.send(std::span(hello).subspan(byte, 1));
            std::this_thread::sleep_for(100ms);
          }
        }},
       true},
      {{"forged_record_after_handshake", true,
        [](int port, const Subject& s) {
          for (unsigned i = 0; i < 4; ++i) {
            TlsAbuser a(port);
            ASSERT_TRUE(a.handshaken()) << s.name;
            // Application data the session's keys never sealed: decryption fails on the server.
            Bytes record{std::byte{0x17}, std::byte{0x03}, std::byte{0x03}, std::byte{0x00}, std::byte{0x40}};
            const Bytes junk = garbage(64, 100 + i);
            record.insert(record.end(), junk.begin(), junk.end());
            a.raw().send(record);
            a.raw().read_some(4096, 200ms);  // the ticket, the alert, the close
          }
        }},
       false},
      {{"never_reads", false,
        [](int port, const Subject& s) {
          TlsAbuser a(port);
          ASSERT_TRUE(a.handshaken()) << s.name;
          Bytes burst;
          while (burst.size() < 64 * 1024) burst.insert(burst.end(), s.request.begin(), s.request.end());
          a.write_without_reading(burst, 1500ms);
        }},
       false},
      {{"connection_churn", false,
        [](int port, const Subject&) {
          for (int i = 0; i < 300; ++i) {
            if (i % 30 == 0) {
              TlsAbuser a(port);  // a whole handshake, then gone without close_notify
              a.raw().reset();
              continue;
            }
            Abuser a(port);
            if (i % 2 == 0) a.reset();
          }
        }},
       false},
  };
}

class AbusedOverTls : public testing::TestWithParam<Case<LayerAbuse>> {};

TEST_P(AbusedOverTls, StaysUpBoundedAndExactForAGoodClientAlongside) {
  expect_survives(subject(GetParam().subject, Link::tls), GetParam().abuse);
}

INSTANTIATE_TEST_SUITE_P(TlsServers, AbusedOverTls, testing::ValuesIn(every_case(tls_abuses())),
                         [](const auto& info) { return case_name(info.param); });

}  // namespace
}  // namespace volley::test
