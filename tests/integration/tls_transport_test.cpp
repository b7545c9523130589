// The TLS transport on its own, over a socket pair, no event loop: its write
// path keeps what the socket does not take and sends it first next time; an
// idle connection holds no record buffers; and the probe of what the kernel
// offers for TLS.
#include <malloc.h>

#include <cstddef>
#include <fstream>
#include <memory>
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

// Bytes the process's allocator has handed out and not had back.
std::size_t heap_in_use() {
  const struct mallinfo2 m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
}

// One end writes `total` bytes in 64 KiB buffers (several records each, so
// batches keep records in the BIO) while the other reads them all: false if
// a byte is wrong or the exchange stalls.
bool burst(net::StreamTransport& from, net::StreamTransport& to, std::size_t total) {
  std::vector<std::byte> out(64 * 1024), in(64 * 1024);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = pattern(i);
  std::size_t sent = 0, received = 0;
  for (int round = 0; round < 10000 && received < total; ++round) {
    boost::system::error_code ec;
    if (sent < total || from.has_buffered_output()) {
      const boost::asio::const_buffer piece(out.data(), std::min(out.size(), total - sent));
      sent += from.write_some(sent < total ? std::span(&piece, 1) : std::span<const boost::asio::const_buffer>{}, ec);
    }
    for (;;) {
      boost::system::error_code read_error;
      const std::size_t n = to.read_some(in, read_error);
      for (std::size_t i = 0; i < n; ++i)
        if (in[i] != pattern((received + i) % out.size())) return false;
      received += n;
      if (read_error || n == 0) break;
    }
  }
  return received == total && !from.has_buffered_output();
}

// After a burst each way, an idle TLS connection gives back what it needed
// only while bytes flowed: OpenSSL's 64 KiB read-ahead and 17 KiB record
// buffers, and the BIO's copy of a batch's records. Kept, they would be
// about 160 KiB a connection (both ends, no batch copy counted); a server
// with many quiet connections pays that for each.
TEST(TlsTransport, AnIdleConnectionAfterABurstHoldsNoRecordBuffers) {
  {
    const std::size_t before = heap_in_use();
    const auto probe = std::make_unique<std::byte[]>(256 * 1024);
    *static_cast<volatile std::byte*>(probe.get()) = std::byte{1};  // used: the allocation cannot be left out
    if (heap_in_use() < before + 256 * 1024)
      GTEST_SKIP() << "this allocator is not the one mallinfo2 reports on (a sanitizer build)";
  }
  constexpr std::size_t kPairs = 8;
  struct Pair {
    SocketPair sockets;
    std::unique_ptr<net::StreamTransport> server, client;
  };
  const TransportFactory make_server = server_transport(Link::tls), make_client = client_transport(Link::tls);
  std::vector<std::unique_ptr<Pair>> pairs;
  pairs.reserve(kPairs);
  const std::size_t before = heap_in_use();
  for (std::size_t i = 0; i < kPairs; ++i) {
    auto p = std::make_unique<Pair>();
    p->server = make_server();
    p->client = make_client();
    p->server->attach(p->sockets.server());
    p->client->attach(p->sockets.client());
    ASSERT_TRUE(handshake(*p->server, *p->client));
    ASSERT_TRUE(burst(*p->server, *p->client, 1 << 20)) << "pair " << i << ", server to client";
    ASSERT_TRUE(burst(*p->client, *p->server, 1 << 20)) << "pair " << i << ", client to server";
    pairs.push_back(std::move(p));
  }
  const std::size_t after = heap_in_use();
  const std::size_t per_pair = after > before ? (after - before) / kPairs : 0;
  EXPECT_LT(per_pair, 64u * 1024) << per_pair << " bytes a connection (both ends), idle";
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
