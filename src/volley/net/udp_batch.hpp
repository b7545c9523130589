#pragma once
// Batched datagram I/O with Linux recvmmsg/sendmmsg: one system call moves up
// to `capacity` datagrams. The batch owns its buffers and address slots, so a
// received batch can be sent back (an echo) in place. Non-blocking: a call
// that finds nothing to do returns 0.
#include <sys/socket.h>

#include <cstddef>
#include <memory>
#include <span>
#include <system_error>
#include <vector>

namespace volley::net {

class UdpBatch {
 public:
  UdpBatch(std::size_t capacity, std::size_t datagram_size);

  std::size_t capacity() const noexcept { return headers_.size(); }
  // Datagram `i`'s buffer (datagram_size bytes) and, after receive(), its length and source.
  std::span<std::byte> buffer(std::size_t i) noexcept { return {data_.get() + i * size_, size_}; }
  std::size_t length(std::size_t i) const noexcept { return headers_[i].msg_len; }
  void set_length(std::size_t i, std::size_t n) noexcept { iov_[i].iov_len = n; }

  // Receives up to capacity datagrams without blocking; returns how many
  // (0: none waiting), or 0 with `ec` set on an error.
  std::size_t receive(int fd, std::error_code& ec);
  // Sends datagrams [0, count): each to the address it came from when
  // `reply` is set (after receive()), else on the connected socket, with the
  // lengths set by set_length() (or received). Returns how many left.
  std::size_t send(int fd, std::size_t count, bool reply, std::error_code& ec);

 private:
  std::size_t size_;
  std::unique_ptr<std::byte[]> data_;
  std::vector<mmsghdr> headers_;
  std::vector<iovec> iov_;
  std::vector<sockaddr_storage> addresses_;
};

}  // namespace volley::net
