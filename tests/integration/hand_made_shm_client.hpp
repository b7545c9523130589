#pragma once
// A shared-memory client that speaks the set-up by hand (docs/PROTOCOL.md,
// "Shared-memory rings"): to offer what a server must refuse, to corrupt a
// ring after the set-up, or to stream raw bytes from a child process.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <span>
#include <string>

#include <gtest/gtest.h>

#include <volley/net/unix_socket.hpp>
#include <volley/wire/shm_ring.hpp>

namespace volley::test {

// A client that makes its region and offer by hand; with Flaw::none it gets
// the server's answer and owns a working region it can then damage, or
// stream raw bytes through.
class HandMadeShmClient {
 public:
  static constexpr std::size_t kCapacity = 64 * 1024;
  // What to get wrong in an offer.
  enum class Flaw { none, unsealed, bad_magic, short_file, no_descriptors };

  HandMadeShmClient(const std::string& address, Flaw flaw) {
    std::error_code ec;
    fd_ = net::connect_unix(*net::parse_unix_address(address), ec);
    EXPECT_GE(fd_, 0) << ec.message();
    const int memfd = ::memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    size_ = flaw == Flaw::short_file ? wire::shm::region_size(kCapacity) / 2 : wire::shm::region_size(kCapacity);
    EXPECT_EQ(::ftruncate(memfd, static_cast<off_t>(size_)), 0);
    void* at = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    EXPECT_NE(at, MAP_FAILED);
    region_ = static_cast<std::byte*>(at);
    if (flaw != Flaw::short_file) wire::shm::format_region({region_, size_}, kCapacity);
    if (flaw == Flaw::bad_magic) region_[0] ^= std::byte{1};
    if (flaw != Flaw::unsealed) {
      EXPECT_EQ(::fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    }
    int pair[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    room_ = pair[0];
    char offer = 'O';
    iovec piece{&offer, 1};
    alignas(cmsghdr) std::array<unsigned char, CMSG_SPACE(2 * sizeof(int))> control{};
    msghdr message{};
    message.msg_iov = &piece;
    message.msg_iovlen = 1;
    if (flaw != Flaw::no_descriptors) {
      message.msg_control = control.data();
      message.msg_controllen = control.size();
      cmsghdr* c = CMSG_FIRSTHDR(&message);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(2 * sizeof(int));
      const int fds[2] = {memfd, pair[1]};
      std::memcpy(CMSG_DATA(c), fds, sizeof fds);
    }
    EXPECT_EQ(::sendmsg(fd_, &message, MSG_NOSIGNAL), 1);
    ::close(memfd);
    ::close(pair[1]);
    ::fcntl(fd_, F_SETFL, 0);  // blocking from here on
  }
  ~HandMadeShmClient() {
    if (region_ != nullptr) ::munmap(region_, size_);
    ::close(room_);
    ::close(fd_);
  }

  // The server's one-byte answer, or what it did instead: "closed" when it
  // closed the connection (an end, or a reset where input was left unread).
  std::string answer() {
    timeval wait{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    char byte = 0;
    const ssize_t n = ::recv(fd_, &byte, 1, 0);
    if (n == 1) return std::string(1, byte);
    if (n == 0 || errno == ECONNRESET) return "closed";
    return "error " + std::string(std::strerror(errno));
  }
  // Claims the client's ring holds more than it can, and rings the doorbell.
  void corrupt_write_index() {
    const wire::ShmRingControl control(wire::shm::ring_of({region_, size_}, kCapacity, 0));
    *control.write_index = kCapacity + 1;
    const char bell = 'D';
    EXPECT_EQ(::send(fd_, &bell, 1, MSG_NOSIGNAL), 1);
  }

  // Writes `bytes` into the client's ring again and again, in pieces that
  // straddle any framing's boundaries, ringing the server as the protocol
  // says, until the process dies. System calls and the ring only (no
  // allocation): safe in a child forked from a process with threads.
  [[noreturn]] void stream_for_ever(std::span<const std::byte> bytes) {
    wire::ShmRingWriter writer(wire::shm::ring_of({region_, size_}, kCapacity, 0), kCapacity);
    std::error_code ec;
    for (;;)
      for (std::size_t at = 0; at < bytes.size();) {
        const std::size_t n = writer.write(bytes.subspan(at, std::min<std::size_t>(777, bytes.size() - at)), ec);
        if (ec) ::_exit(4);
        at += n;
        if (n > 0 && writer.reader_needs_doorbell()) {
          const char bell = 'D';
          if (::send(fd_, &bell, 1, MSG_NOSIGNAL) < 0) ::_exit(5);
        }
        char bells[64];
        if (n == 0 && writer.ask_for_room(ec) && ::recv(room_, bells, sizeof bells, 0) <= 0) ::_exit(6);
      }
  }

 private:
  int fd_ = -1;
  int room_ = -1;
  std::byte* region_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace volley::test
