#include <volley/net/udp_batch.hpp>

#include <cerrno>
#include <cstring>

namespace volley::net {

UdpBatch::UdpBatch(std::size_t capacity, std::size_t datagram_size)
    : size_(datagram_size),
      data_(std::make_unique<std::byte[]>(capacity * datagram_size)),
      headers_(capacity),
      iov_(capacity),
      addresses_(capacity) {
  for (std::size_t i = 0; i < capacity; ++i) {
    iov_[i] = {data_.get() + i * size_, size_};
    std::memset(&headers_[i], 0, sizeof headers_[i]);
    headers_[i].msg_hdr.msg_iov = &iov_[i];
    headers_[i].msg_hdr.msg_iovlen = 1;
  }
}

std::size_t UdpBatch::receive(int fd, std::error_code& ec) {
  ec.clear();
  for (std::size_t i = 0; i < headers_.size(); ++i) {
    iov_[i].iov_len = size_;
    headers_[i].msg_hdr.msg_name = &addresses_[i];
    headers_[i].msg_hdr.msg_namelen = sizeof addresses_[i];
    headers_[i].msg_len = 0;
  }
  const int n = ::recvmmsg(fd, headers_.data(), static_cast<unsigned>(headers_.size()), MSG_DONTWAIT, nullptr);
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK) ec = std::error_code(errno, std::system_category());
    return 0;
  }
  for (int i = 0; i < n; ++i) iov_[i].iov_len = headers_[i].msg_len;  // ready to echo as received
  return static_cast<std::size_t>(n);
}

std::size_t UdpBatch::send(int fd, std::size_t count, bool reply, std::error_code& ec) {
  ec.clear();
  for (std::size_t i = 0; i < count; ++i) {
    if (!reply) {
      headers_[i].msg_hdr.msg_name = nullptr;
      headers_[i].msg_hdr.msg_namelen = 0;
    }
  }
  std::size_t done = 0;
  while (done < count) {
    const int n = ::sendmmsg(fd, headers_.data() + done, static_cast<unsigned>(count - done), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      // A full send buffer drops the rest, as the network would: UDP callers count loss.
      if (errno != EAGAIN && errno != EWOULDBLOCK) ec = std::error_code(errno, std::system_category());
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  return done;
}

}  // namespace volley::net
