#pragma once
// One receive on a socket with TCP_INQ on (and what a read makes of a
// receive's result): the kernel says with it how much
// input it left, counting an end still to be read as 1, so a reader knows it
// read the socket dry without one more receive that would say EAGAIN.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>

namespace volley::net::detail {

// recvmsg into `data`: its result (errno set when < 0); `left` is what the
// kernel left after it, or -1 when it did not say (TCP_INQ off).
inline ssize_t receive_counting_left(int fd, void* data, std::size_t size, int& left) noexcept {
  iovec piece{data, size};
  alignas(cmsghdr) unsigned char control[CMSG_SPACE(sizeof(int))];
  msghdr message{};
  message.msg_iov = &piece;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(fd, &message, 0);  // the socket is non-blocking
  } while (n < 0 && errno == EINTR);
  left = -1;
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c))
    if (c->cmsg_level == IPPROTO_TCP && c->cmsg_type == TCP_CM_INQ) std::memcpy(&left, CMSG_DATA(c), sizeof left);
  return n;
}

// What a connection input's read_some() gives for a receive's result `n`
// (errno read when < 0) into a buffer of `size`: the count, or the errors
// as Asio's read_some gives them (would_block, eof, the socket's error).
inline std::size_t receive_result(ssize_t n, std::size_t size, boost::system::error_code& ec) noexcept {
  if (n < 0) {
    ec = boost::system::error_code(errno, boost::asio::error::get_system_category());
    return 0;
  }
  if (n == 0 && size != 0) {
    ec = boost::asio::error::eof;
    return 0;
  }
  ec = boost::system::error_code();
  return static_cast<std::size_t>(n);
}

}  // namespace volley::net::detail
