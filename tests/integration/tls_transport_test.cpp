// The TLS transport on its own, over a socket pair, no event loop: its write
// path keeps what the socket does not take and sends it first next time.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <span>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <gtest/gtest.h>

#include "links.hpp"

namespace volley::test {
namespace {

std::byte pattern(std::size_t i) { return static_cast<std::byte>((i * 131 + (i >> 10) + 7) & 0xff); }

class SocketPair {
 public:
  SocketPair() {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds_) != 0) throw std::runtime_error("socketpair failed");
    for (const int fd : fds_) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    const int small = 32 * 1024;  // the socket takes a few records, then writes come back short
    ::setsockopt(fds_[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  }
  ~SocketPair() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  SocketPair(const SocketPair&) = delete;
  SocketPair& operator=(const SocketPair&) = delete;
  int server() const { return fds_[0]; }
  int client() const { return fds_[1]; }

 private:
  int fds_[2] = {-1, -1};
};

// Both ends' handshakes, stepped in turn until both are done (bounded).
bool handshake(net::StreamTransport& a, net::StreamTransport& b) {
  bool a_done = false, b_done = false;
  for (int step = 0; step < 1000 && !(a_done && b_done); ++step) {
    boost::system::error_code ec;
    if (!a_done) a_done = a.handshake(ec) == net::StreamTransport::Wait::none;
    if (ec) return false;
    if (!b_done) b_done = b.handshake(ec) == net::StreamTransport::Wait::none;
    if (ec) return false;
  }
  return a_done && b_done;
}

// Each write is one buffer that makes one TLS record, the case sent straight
// from OpenSSL's buffer: a send the socket takes only partly must keep the
// rest, send it before anything newer, and lose nothing.
TEST(TlsTransport, OneRecordWritesThatTheSocketTakesPartlyKeepTheRestAndSendItFirst) {
  SocketPair sockets;
  const auto server = server_transport(Link::tls)();
  const auto client = client_transport(Link::tls)();
  server->attach(sockets.server());
  client->attach(sockets.client());
  ASSERT_TRUE(handshake(*server, *client));

  constexpr std::size_t kTotal = 4u << 20;
  constexpr std::size_t kWrite = 10000;  // under one record's 16 KiB
  std::vector<std::byte> out(kTotal);
  for (std::size_t i = 0; i < kTotal; ++i) out[i] = pattern(i);
  std::vector<std::byte> in(64 * 1024);
  std::size_t accepted = 0, received = 0, wrong = 0;
  int kept = 0;  // writes after which part of the record waited in the transport
  for (int round = 0; round < 100000 && received < kTotal && wrong == 0; ++round) {
    while (accepted < kTotal) {
      const boost::asio::const_buffer piece(out.data() + accepted, std::min(kWrite, kTotal - accepted));
      boost::system::error_code ec;
      const std::size_t n = server->write_some(std::span(&piece, 1), ec);
      accepted += n;
      if (server->has_buffered_output()) ++kept;
      if (ec || n == 0) break;  // the socket is full: the reader's turn
    }
    if (accepted == kTotal && server->has_buffered_output()) {
      boost::system::error_code ec;
      server->write_some({}, ec);  // nothing new: sends what waits
    }
    for (;;) {
      boost::system::error_code ec;
      const std::size_t n = client->read_some(in, ec);
      for (std::size_t i = 0; i < n; ++i) wrong += in[i] != pattern(received + i) ? 1 : 0;
      received += n;
      if (ec || n == 0) break;
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(received, kTotal);
  EXPECT_EQ(accepted, kTotal);
  EXPECT_GT(kept, 0) << "no write came back short: the case under test never happened";
}

}  // namespace
}  // namespace volley::test
