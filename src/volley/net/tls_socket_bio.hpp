#pragma once
// The BIO between OpenSSL and a TLS connection's socket. Two things OpenSSL's
// own socket BIO cannot do, each worth a system call per record:
//  - Batched output: the records OpenSSL writes for a batch are kept and
//    sent with one system call per batch instead of one write() per 16 KiB
//    record. The batch's last record is not copied: it goes out from
//    OpenSSL's own buffer in the same sendmsg() as the kept ones, and only
//    what the socket does not take is kept. Outside a batch
//    (handshake, alerts, close_notify) writes go straight to the socket, as
//    with the socket BIO. Either way, while kept bytes wait, new ones queue
//    behind them, to keep the order.
//  - Knowing the socket is drained: a receive that came back short says so,
//    so the reader stops without one more receive that would say EAGAIN.
//    Where the socket has TCP_INQ on (the connection's edge wait turns it
//    on), each receive also asks the kernel what it left: "drained" is then
//    exact, and says the socket is dry (dry()).
#include <openssl/bio.h>

#include <algorithm>
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

  // A batch of `records` records carrying `bytes` of plaintext follows: all
  // but the last are kept; the last (and any write after it, such as a
  // record OpenSSL adds of its own) is sent at once behind them, and what the
  // socket does not take is kept for flush(). A count that is off costs a
  // copy or a system call, never order: kept bytes always go first.
  void begin_batch(std::size_t records, std::size_t bytes);
  // Back to direct writes (handshake, alerts, close_notify): sent at once,
  // behind anything kept; a send that would block is retried by OpenSSL.
  void end_batch() noexcept { batch_left_ = 0; }
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
  // One sendmsg() of what is kept and then `data`; keeps what the socket does not take.
  void send_behind_kept(const char* data, std::size_t size);

  int fd_;
  std::size_t batch_left_ = 0;  // records of the batch still to come (at least 1 in a batch); 0: direct writes
  bool drained_ = false;
  bool dry_ = false;
  std::vector<char> out_;
  std::size_t out_sent_ = 0;
};

}  // namespace volley::net::detail
