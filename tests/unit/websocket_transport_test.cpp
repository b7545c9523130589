// A WebSocket transport over a layer below with no socket: what one read
// turn takes from a peer that sends as fast as it is read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/error.hpp>

#include <volley/net/stream_transport.hpp>
#include <volley/net/websocket.hpp>
#include <volley/wire/websocket.hpp>

#include "volley/net/websocket_handshake.hpp"
#include "websocket_frames.hpp"

using volley::test::frame;
using volley::test::kKey;
using volley::test::operator+;
using volley::wire::websocket::Opcode;
namespace detail = volley::net::detail;

namespace {

using volley::net::StreamTransport;

// The layer under a WebSocket server, with no socket: it hands up `head` (the
// upgrade request and any first frames), then `supply` bytes of `unit` over
// and over, as fast as they are read, then would_block; it takes every write.
class EndlessPeer final : public StreamTransport {
 public:
  struct Counts {
    std::size_t taken = 0;  // bytes read from it
    std::string written;
  };
  EndlessPeer(std::vector<std::byte> head, std::vector<std::byte> unit, std::size_t supply, Counts& counts)
      : head_(std::move(head)), unit_(std::move(unit)), supply_(supply), counts_(counts) {}

  void attach(int /*fd*/) override {}
  Wait handshake(boost::system::error_code& ec) override {
    ec = {};
    return Wait::none;
  }
  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    ec = {};
    std::size_t n = 0;
    while (n < buffer.size()) {
      const std::size_t at = counts_.taken;
      std::span<const std::byte> from;
      if (at < head_.size()) {
        from = std::span(head_).subspan(at);
      } else if (at - head_.size() < supply_) {
        const std::size_t served = at - head_.size(), phase = served % unit_.size();
        from = std::span(unit_).subspan(phase, std::min(unit_.size() - phase, supply_ - served));
      } else {
        break;
      }
      const std::size_t k = std::min(from.size(), buffer.size() - n);
      std::copy_n(from.begin(), k, buffer.begin() + static_cast<std::ptrdiff_t>(n));
      n += k;
      counts_.taken += k;
    }
    blocked_ = n == 0 ? Wait::read : Wait::none;
    if (n == 0) ec = boost::asio::error::would_block;
    return n;
  }
  std::size_t write_some(std::span<const boost::asio::const_buffer> buffers, boost::system::error_code& ec) override {
    ec = {};
    std::size_t n = 0;
    for (const auto& b : buffers) {
      counts_.written.append(static_cast<const char*>(b.data()), b.size());
      n += b.size();
    }
    return n;
  }
  Wait blocked_on() const override { return blocked_; }
  bool has_buffered_input() const override { return false; }
  void shutdown_send() override {}
  std::string describe() const override { return "endless peer"; }

 private:
  std::vector<std::byte> head_, unit_;
  std::size_t supply_;
  Counts& counts_;
  Wait blocked_ = Wait::none;
};

std::vector<std::byte> upgrade_request() {
  const std::string request = detail::make_upgrade_request("localhost", "/", detail::make_client_key());
  const auto* p = reinterpret_cast<const std::byte*>(request.data());
  return {p, p + request.size()};
}

// What a flooding client sends within every bound: 1000 empty fragments, then
// one byte of its message.
std::vector<std::byte> sparse_fragments() {
  std::vector<std::byte> unit;
  for (int i = 0; i < 1000; ++i) unit = unit + frame(false, Opcode::continuation, "", &kKey);
  return unit + frame(false, Opcode::continuation, "x", &kKey);
}

constexpr std::size_t kOneRead = 64 * 1024;  // the transport's input buffer: the most one read below takes

// Reads the transport until the peer has nothing more (`total` bytes),
// checking each read turn's share of them; returns the data read.
std::string read_turns(StreamTransport& ws, const EndlessPeer::Counts& counts, std::size_t total) {
  std::string data;
  std::vector<std::byte> out(kOneRead);
  for (int turn = 0; turn < 1000; ++turn) {
    const std::size_t before = counts.taken;
    boost::system::error_code ec;
    const std::size_t n = ws.read_some(out, ec);
    data.append(reinterpret_cast<const char*>(out.data()), n);
    EXPECT_LE(counts.taken - before, volley::net::kMaxReadTurn + kOneRead) << "turn " << turn;
    if (ec == boost::asio::error::eof) continue;  // the peer's close, said once
    if (ec == boost::asio::error::would_block && ws.blocked_on() == StreamTransport::Wait::read) break;
    // A turn that ended for the bound says more is there, so the loop comes back.
    EXPECT_TRUE(counts.taken == total || ws.has_buffered_input()) << "turn " << turn;
  }
  return data;
}

}  // namespace

// One peer cannot hold its loop: however fast frames come, a read turn takes
// at most kMaxReadTurn bytes of them (and the read that crossed it) and ends
// with has_buffered_input(), so the loop's other connections run in between.
TEST(WebSocketTransport, AReadTurnTakesAtMostItsBoundOfFramesHoweverFastTheyCome) {
  const std::vector<std::byte> unit = sparse_fragments();
  const std::size_t units = 8 * volley::net::kMaxReadTurn / unit.size() + 1;
  EndlessPeer::Counts counts;
  const std::vector<std::byte> head = upgrade_request() + frame(false, Opcode::binary, "", &kKey);
  auto ws = volley::net::make_websocket_transport(
      volley::net::WebSocketRole::server, {}, std::make_unique<EndlessPeer>(head, unit, units * unit.size(), counts));
  boost::system::error_code ec;
  ASSERT_EQ(ws->handshake(ec), StreamTransport::Wait::none);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_EQ(counts.written.substr(0, 12), "HTTP/1.1 101");
  const std::string data = read_turns(*ws, counts, head.size() + units * unit.size());
  EXPECT_EQ(counts.taken, head.size() + units * unit.size());
  EXPECT_EQ(data, std::string(units, 'x'));  // every byte of the message so far, none twice
}

// After the peer's close the socket is only drained to its end, and a peer
// that floods after its close does not hold the loop either.
TEST(WebSocketTransport, WhatFollowsThePeersCloseIsDrainedInBoundedTurns) {
  const std::vector<std::byte> unit = sparse_fragments();
  const std::size_t units = 8 * volley::net::kMaxReadTurn / unit.size() + 1;
  EndlessPeer::Counts counts;
  const std::string close_payload("\x03\xe8", 2);  // 1000
  const std::vector<std::byte> head = upgrade_request() + frame(true, Opcode::close, close_payload, &kKey);
  auto ws = volley::net::make_websocket_transport(
      volley::net::WebSocketRole::server, {}, std::make_unique<EndlessPeer>(head, unit, units * unit.size(), counts));
  boost::system::error_code ec;
  ASSERT_EQ(ws->handshake(ec), StreamTransport::Wait::none);
  const std::string data = read_turns(*ws, counts, head.size() + units * unit.size());
  EXPECT_EQ(ws->ended_in_band(), StreamTransport::End::closed_by_peer);
  EXPECT_EQ(counts.taken, head.size() + units * unit.size());
  EXPECT_EQ(data, "");
}
