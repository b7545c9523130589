#pragma once
// The BIO between OpenSSL and a TLS connection's socket. Two things OpenSSL's
// own socket BIO cannot do, each worth a system call per record:
//  - Gathered output: while gathering, the records OpenSSL writes are kept and
//    sent with one send() per batch instead of one write() per 16 KiB record.
//    A batch of one record skips the copy: it is sent from OpenSSL's own
//    buffer, and only what the socket does not take is kept. Outside a batch
//    (handshake, alerts, close_notify) writes go straight to the socket, as
//    with the socket BIO. Either way, while kept bytes wait, new ones queue
//    behind them, to keep the order.
//  - Knowing the socket is drained: a receive that came back short says so,
//    so the reader stops without one more receive that would say EAGAIN.
//    Where the socket has TCP_INQ on (the connection's edge wait turns it
//    on), each receive also asks the kernel what it left: "drained" is then
//    exact, and says the socket is dry (dry()).
#include <openssl/bio.h>

#include <cstddef>
#include <vector>

#include <boost/system/error_code.hpp>

namespace volley::net::detail {

class TlsSocketBio {
 public:
  explicit TlsSocketBio(int fd) : fd_(fd) {}
  TlsSocketBio(const TlsSocketBio&) = delete;
  TlsSocketBio& operator=(const TlsSocketBio&) = delete;

  // A new BIO on this object (which must outlive it), for SSL_set_bio.
  BIO* make_bio();

  // How the records of application data are written:
  //  - direct: sent at once; a send that would block is retried by OpenSSL;
  //  - gather: kept, for flush() to send together;
  //  - send_then_keep (a batch of one record): sent at once, and what the
  //    socket does not take is kept for flush(), like a gathered batch.
  enum class Output { direct, gather, send_then_keep };
  void output(Output mode) noexcept { output_ = mode; }
  // Sends what was kept, as far as the socket takes it: true when nothing is
  // left; `ec` set on a socket error (would_block is not one).
  bool flush(boost::system::error_code& ec);
  std::size_t pending_output() const noexcept { return out_.size() - out_sent_; }
  // The last receive came back shorter than asked (or, with TCP_INQ, left
  // nothing): the socket had no more.
  bool drained() const noexcept { return drained_; }
  // The last receive since forget_dry() left the socket empty, as the kernel
  // said (EAGAIN, or a TCP_INQ count of 0).
  bool dry() const noexcept { return dry_; }
  // A new read begins: what an earlier one saw is stale (the loop may have
  // taken an edge since), until a receive says again.
  void forget_dry() noexcept { dry_ = false; }

 private:
  static int on_write(BIO* bio, const char* data, int size);
  static int on_read(BIO* bio, char* data, int size);
  static long on_ctrl(BIO* bio, int command, long number, void* pointer);

  static constexpr std::size_t kKeptCapacity = 1 << 20;

  int fd_;
  Output output_ = Output::direct;
  bool drained_ = false;
  bool dry_ = false;
  std::vector<char> out_;
  std::size_t out_sent_ = 0;
};

}  // namespace volley::net::detail
