#include "tls_socket_bio.hpp"

#include "tcp_inq.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

namespace volley::net::detail {

namespace {

bool would_block(int e) noexcept { return e == EAGAIN || e == EWOULDBLOCK || e == EINTR; }

// OpenSSL hands out BIO type indexes from a small process-wide range, so the
// method table is made once and shared by every connection; it holds only
// function pointers and is never changed after it is made.
const BIO_METHOD* socket_bio_method(int (*write)(BIO*, const char*, int), int (*read)(BIO*, char*, int),
                                    long (*ctrl)(BIO*, int, long, void*)) {
  static const BIO_METHOD* const method = [&] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "volley TLS socket");
    if (m == nullptr || BIO_meth_set_write(m, write) != 1 || BIO_meth_set_read(m, read) != 1 ||
        BIO_meth_set_ctrl(m, ctrl) != 1 || BIO_meth_set_create(m, [](BIO* b) {
          BIO_set_init(b, 1);
          return 1;
        }) != 1)
      throw std::runtime_error("TLS: cannot make the socket BIO method");
    return m;
  }();
  return method;
}

}  // namespace

BIO* TlsSocketBio::make_bio() {
  BIO* bio = BIO_new(socket_bio_method(&on_write, &on_read, &on_ctrl));
  if (bio == nullptr) throw std::runtime_error("TLS: BIO_new failed");
  BIO_set_data(bio, this);
  return bio;
}

void TlsSocketBio::begin_batch(std::size_t records, std::size_t bytes) {
  batch_left_ = std::max<std::size_t>(records, 1);
  // Room for the batch at once (a record more than is kept, at most), not
  // regrown and copied again record by record. A record's header and AEAD
  // overhead (5 + 8 + 16 + 1 bytes at most for GCM and ChaCha20-Poly1305)
  // fit in kOverhead; a suite with more costs one regrowth.
  constexpr std::size_t kOverhead = 32;
  if (records > 1) out_.reserve(out_.size() + bytes + records * kOverhead);
}

int TlsSocketBio::on_write(BIO* bio, const char* data, int size) {
  auto* self = static_cast<TlsSocketBio*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (size <= 0) return 0;
  if (self->batch_left_ == 1) {  // a batch's last record
    self->send_behind_kept(data, static_cast<std::size_t>(size));
    return size;
  }
  // A batch's earlier records are kept, and so is a direct write behind kept bytes.
  if (self->batch_left_ > 1) --self->batch_left_;
  if (self->batch_left_ > 0 || self->pending_output() > 0) {
    self->out_.insert(self->out_.end(), data, data + size);
    return size;
  }
  const ssize_t n = ::send(self->fd_, data, static_cast<std::size_t>(size), MSG_NOSIGNAL);
  if (n >= 0) return static_cast<int>(n);
  if (would_block(errno)) BIO_set_retry_write(bio);
  return -1;
}

int TlsSocketBio::on_read(BIO* bio, char* data, int size) {
  auto* self = static_cast<TlsSocketBio*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (size <= 0) return 0;
  self->dry_ = false;
  int left = -1;
  const ssize_t n = receive_counting_left(self->fd_, data, static_cast<std::size_t>(size), left);
  if (n < 0) {
    self->drained_ = false;
    if (would_block(errno)) {
      self->dry_ = true;  // EAGAIN (receive_counting_left retries EINTR itself)
      BIO_set_retry_read(bio);
    }
    return -1;
  }
  if (left < 0) {
    self->drained_ = n < size;  // no count (TCP_INQ off): a short read says it
  } else {
    self->drained_ = left == 0;  // the kernel counts an end still to be read as 1
    self->dry_ = n > 0 && left == 0;
  }
  return static_cast<int>(n);
}

long TlsSocketBio::on_ctrl(BIO* bio, int command, long /*number*/, void* /*pointer*/) {
  auto* self = static_cast<TlsSocketBio*>(BIO_get_data(bio));
  switch (command) {
    case BIO_CTRL_FLUSH: return 1;  // a batch is sent by flush(); a direct write is sent already
    case BIO_CTRL_WPENDING: return static_cast<long>(self->pending_output());
    case BIO_CTRL_PENDING: return 0;
    default: return 0;
  }
}

void TlsSocketBio::send_behind_kept(const char* data, std::size_t size) {
  const std::size_t kept = pending_output();
  iovec parts[2];
  std::size_t count = 0;
  if (kept > 0) parts[count++] = {out_.data() + out_sent_, kept};
  parts[count++] = {const_cast<char*>(data), size};
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = count;
  ssize_t n;
  do {
    n = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  // The rest (all of it after an error) is kept; flush() sends it or meets the error again.
  const std::size_t sent = n > 0 ? static_cast<std::size_t>(n) : 0;
  const std::size_t of_kept = std::min(sent, kept);
  out_sent_ += of_kept;
  out_.insert(out_.end(), data + (sent - of_kept), data + size);
}

bool TlsSocketBio::flush(boost::system::error_code& ec) {
  while (pending_output() > 0) {
    const ssize_t n = ::send(fd_, out_.data() + out_sent_, pending_output(), MSG_NOSIGNAL);
    if (n < 0) {
      if (!would_block(errno)) ec = {errno, boost::system::system_category()};
      return false;
    }
    out_sent_ += static_cast<std::size_t>(n);
  }
  // Given back, not kept: an idle connection holds no batch's worth of
  // memory, and the next batch's buffer comes warm from the allocator.
  std::vector<char>().swap(out_);
  out_sent_ = 0;
  return true;
}

}  // namespace volley::net::detail
