// The TLS transport on its own, over a socket pair, no event loop: its write
// path keeps what the socket does not take and sends it first next time; and
// the probe of what the kernel offers for TLS.
#include <cstddef>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <gtest/gtest.h>

#include "links.hpp"
#include "transport_pair.hpp"

namespace volley::test {
namespace {

std::byte pattern(std::size_t i) { return static_cast<std::byte>((i * 131 + (i >> 10) + 7) & 0xff); }

// Each write is one buffer that makes one TLS record, the case sent straight
// from OpenSSL's buffer: a send the socket takes only partly must keep the
// rest, send it before anything newer, and lose nothing.
TEST(TlsTransport, OneRecordWritesThatTheSocketTakesPartlyKeepTheRestAndSendItFirst) {
  SocketPair sockets(32 * 1024);  // the socket takes a few records, then writes come back short
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

// The probe of kernel TLS agrees with the kernel's own list and says why not
// where there is none; either way the records stay in user space, which the
// start-up line says, and a TLS connection there works (every test above).
TEST(KernelTls, TheProbeAgreesWithTheKernelsListAndSaysWhyNot) {
  std::string listed;
  std::ifstream ulp("/proc/sys/net/ipv4/tcp_available_ulp");
  std::getline(ulp, listed);
  const net::KernelTlsProbe& probe = net::probe_kernel_tls();
  if ((" " + listed + " ").find(" tls ") != std::string::npos) {
    EXPECT_TRUE(probe.available) << probe.detail;
  }
  if (probe.available) {
    EXPECT_NE(probe.detail.find("the kernel offers tls"), std::string::npos) << probe.detail;
  } else {
    EXPECT_NE(probe.detail.find("no tls upper-layer protocol"), std::string::npos) << probe.detail;
    EXPECT_NE(probe.detail.find("TCP_ULP \"tls\": "), std::string::npos) << probe.detail;
    EXPECT_NE(probe.detail.find(listed.empty() ? "none listed" : listed), std::string::npos) << probe.detail;
  }
  const std::string line = net::tls_record_layer_text();
  EXPECT_NE(line.find("TLS records in user space by OpenSSL"), std::string::npos) << line;
  EXPECT_NE(line.find(probe.detail), std::string::npos) << line;
}

}  // namespace
}  // namespace volley::test
