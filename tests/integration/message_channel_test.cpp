// net::MessageChannel: one test written against the interface runs over the
// ARQ channel and the TCP channel (an SCTP channel cannot talk to a second one
// in the same process: libusrsctp keeps one stack per process; its own tests
// run it against arq-recv), then what only TCP's length prefix can get wrong.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/write.hpp>

#include <volley/arq/udp_channel.hpp>
#include <volley/net/tcp_message_channel.hpp>
#include <volley/wire/error.hpp>

#include "run_until.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;
using volley::net::MessageChannel;
using volley::net::TcpMessageChannel;
using namespace std::chrono_literals;

namespace {

const auto kLocalhost = asio::ip::make_address("127.0.0.1");

// A listening channel and one that connects to it, on one loop.
struct ChannelPair {
  std::unique_ptr<MessageChannel> listener, connector;
};

using PairMaker = ChannelPair (*)(asio::io_context&, MessageChannel::MessageHandler, MessageChannel::MessageHandler);

ChannelPair arq_pair(asio::io_context& loop, MessageChannel::MessageHandler at_listener,
                     MessageChannel::MessageHandler at_connector) {
  ChannelPair p;
  auto listener = std::make_unique<volley::arq::ArqChannel>(loop, udp::socket(loop, udp::endpoint(kLocalhost, 0)),
                                                            std::nullopt, volley::arq::SenderConfig{},
                                                            volley::arq::ReceiverConfig{}, std::move(at_listener));
  const auto at = listener->local_endpoint();
  p.listener = std::move(listener);
  p.connector = std::make_unique<volley::arq::ArqChannel>(loop, udp::socket(loop, udp::endpoint(kLocalhost, 0)), at,
                                                          volley::arq::SenderConfig{}, volley::arq::ReceiverConfig{},
                                                          std::move(at_connector));
  return p;
}

ChannelPair tcp_pair(asio::io_context& loop, MessageChannel::MessageHandler at_listener,
                     MessageChannel::MessageHandler at_connector) {
  ChannelPair p;
  auto listener = std::make_unique<TcpMessageChannel>(tcp::acceptor(loop, tcp::endpoint(kLocalhost, 0)),
                                                      std::move(at_listener), TcpMessageChannel::Options{});
  const auto at = listener->local_endpoint();
  p.listener = std::move(listener);
  tcp::socket socket(loop);
  socket.connect(at);
  p.connector = std::make_unique<TcpMessageChannel>(std::move(socket), std::move(at_connector), TcpMessageChannel::Options{});
  return p;
}

// Message i: its index in the first four bytes, then (i * 7) % 1000 bytes of filler that depends on i.
std::vector<std::byte> message(std::uint32_t i) {
  std::vector<std::byte> m(4 + (i * 7) % 1000);
  for (std::size_t k = 0; k < m.size(); ++k) m[k] = static_cast<std::byte>(k < 4 ? (i >> (8 * k)) : i + k);
  return m;
}

struct Param {
  const char* name;
  PairMaker make;
};
void PrintTo(const Param& p, std::ostream* out) { *out << p.name; }

class AnyMessageChannel : public ::testing::TestWithParam<Param> {};

// The connector sends 300 messages, the listener echoes each; the connector
// ends its direction, the listener ends its own on seeing that, and both
// closes complete without error, every message having arrived once, intact
// and in order both ways.
TEST_P(AnyMessageChannel, CarriesMessagesBothWaysInOrderThenEndsInAnOrderlyWay) {
  constexpr std::uint32_t kCount = 300;
  asio::io_context loop;
  MessageChannel* listener = nullptr;
  std::vector<std::vector<std::byte>> at_listener, at_connector;
  auto pair = GetParam().make(
      loop,
      [&](std::span<const std::byte> m) {
        at_listener.emplace_back(m.begin(), m.end());
        EXPECT_TRUE(listener->send(m));
      },
      [&](std::span<const std::byte> m) { at_connector.emplace_back(m.begin(), m.end()); });
  listener = pair.listener.get();
  bool listener_ready = false, connector_ready = false;
  std::optional<std::error_code> listener_closed, connector_closed, peer_finished;
  pair.listener->start();
  pair.connector->start();
  pair.listener->on_ready([&](const std::error_code& e) {
    EXPECT_FALSE(e) << e.message();
    listener_ready = true;
  });
  pair.connector->on_ready([&](const std::error_code& e) {
    EXPECT_FALSE(e) << e.message();
    connector_ready = true;
  });
  pair.listener->on_peer_finished([&](const std::error_code& e) {
    peer_finished = e;
    pair.listener->close([&](const std::error_code& e2) { listener_closed = e2; });
  });
  // Sent before anything is known of the peer: queued, not refused.
  std::uint32_t sent = 0;
  for (; sent < 10; ++sent) ASSERT_TRUE(pair.connector->send(message(sent)));
  ASSERT_TRUE(volley::test::run_until(loop, [&] { return at_connector.size() == sent; }, 10s))
      << at_connector.size() << " of " << sent << " echoed";
  for (; sent < kCount; ++sent) {
    ASSERT_TRUE(pair.connector->send(message(sent))) << pair.connector->error().message();
    // A window or queue keeps its bound: wait for the echoes now and then.
    if (sent % 50 == 49) {
      ASSERT_TRUE(volley::test::run_until(loop, [&] { return at_connector.size() == sent + 1; }, 10s));
    }
  }
  ASSERT_TRUE(volley::test::run_until(loop, [&] { return at_connector.size() == kCount; }, 10s));
  pair.connector->close([&](const std::error_code& e) { connector_closed = e; });
  ASSERT_TRUE(volley::test::run_until(loop, [&] { return listener_closed && connector_closed; }, 10s));
  EXPECT_TRUE(listener_ready);
  EXPECT_TRUE(connector_ready);
  ASSERT_TRUE(peer_finished.has_value());
  EXPECT_FALSE(*peer_finished) << peer_finished->message();
  EXPECT_FALSE(*listener_closed) << listener_closed->message();
  EXPECT_FALSE(*connector_closed) << connector_closed->message();
  ASSERT_EQ(at_listener.size(), kCount);
  ASSERT_EQ(at_connector.size(), kCount);
  for (std::uint32_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(at_listener[i], message(i)) << "message " << i << " at the listener";
    ASSERT_EQ(at_connector[i], message(i)) << "echo " << i << " at the connector";
  }
  // Ended: nothing more is accepted.
  EXPECT_FALSE(pair.connector->send(message(0)));
  pair.listener->stop();
  pair.connector->stop();
}

INSTANTIATE_TEST_SUITE_P(Channels, AnyMessageChannel,
                         ::testing::Values(Param{"arq_over_udp", &arq_pair}, Param{"length_prefixed_tcp", &tcp_pair}),
                         [](const auto& info) { return std::string(info.param.name); });

// A listening TCP channel and a raw peer that writes what it likes.
struct RawPeer {
  asio::io_context loop;
  std::vector<std::vector<std::byte>> delivered;
  TcpMessageChannel channel{tcp::acceptor(loop, tcp::endpoint(kLocalhost, 0)),
                            [this](std::span<const std::byte> m) { delivered.emplace_back(m.begin(), m.end()); },
                            TcpMessageChannel::Options{.max_message_size = 100}};
  tcp::socket peer{loop};
  std::optional<std::error_code> finished;

  RawPeer() {
    channel.start();
    channel.on_peer_finished([this](const std::error_code& e) { finished = e; });
    peer.connect(channel.local_endpoint());
  }
  void write(std::initializer_list<std::uint8_t> bytes) {
    const std::vector<std::uint8_t> b(bytes);
    asio::write(peer, asio::buffer(b));
  }
};

}  // namespace

TEST(TcpMessageChannel, ALengthOverTheMaximumFailsTheChannelBeforeAnythingIsAllocated) {
  RawPeer r;
  r.write({0, 0, 0, 3, 'a', 'b', 'c'});  // a good message first
  r.write({0xff, 0xff, 0xff, 0xff});      // 4 GiB - 1
  ASSERT_TRUE(volley::test::run_until(r.loop, [&] { return r.finished.has_value(); }, 10s));
  EXPECT_EQ(*r.finished, volley::wire::make_error_code(volley::wire::Errc::length_over_maximum));
  EXPECT_EQ(r.channel.error(), *r.finished);
  ASSERT_EQ(r.delivered.size(), 1u);
  EXPECT_EQ(r.delivered[0].size(), 3u);
  EXPECT_FALSE(r.channel.send(std::vector<std::byte>(3))) << "a failed channel refuses messages";
  // The channel closed its side: the peer reads the end.
  std::array<std::byte, 1> byte{};
  boost::system::error_code ec;
  r.peer.read_some(asio::buffer(byte), ec);
  EXPECT_EQ(ec, asio::error::eof);
}

TEST(TcpMessageChannel, APeerThatClosesInsideAMessageIsAFailureNotAnEnd) {
  RawPeer r;
  r.write({0, 0, 0, 10, 'a', 'b', 'c'});  // 3 of 10 bytes
  r.peer.shutdown(tcp::socket::shutdown_send);
  ASSERT_TRUE(volley::test::run_until(r.loop, [&] { return r.finished.has_value(); }, 10s));
  EXPECT_TRUE(*r.finished) << "a cut message was taken for an orderly end";
  EXPECT_TRUE(r.delivered.empty());
}

TEST(TcpMessageChannel, AnEmptyMessageAndOneOfExactlyTheMaximumArrive) {
  RawPeer r;
  r.write({0, 0, 0, 0});
  std::vector<std::uint8_t> largest(4 + 100, 'x');
  largest[3] = 100;
  largest[0] = largest[1] = largest[2] = 0;
  asio::write(r.peer, asio::buffer(largest));
  r.peer.shutdown(tcp::socket::shutdown_send);
  ASSERT_TRUE(volley::test::run_until(r.loop, [&] { return r.finished.has_value(); }, 10s));
  EXPECT_FALSE(*r.finished) << r.finished->message();
  ASSERT_EQ(r.delivered.size(), 2u);
  EXPECT_TRUE(r.delivered[0].empty());
  EXPECT_EQ(r.delivered[1].size(), 100u);
  EXPECT_EQ(r.channel.stats().messages_received, 2u);
  EXPECT_EQ(r.channel.stats().bytes_received, 4u + 4u + 100u);
}

// Destroyed with an accept, a read and writes in flight: no handler of the
// user's runs after, and the loop drains what was in flight without touching
// freed memory (the sanitizer builds check the latter).
TEST(TcpMessageChannel, DestroyedWithOperationsInFlightRunsNoHandlerAfterwards) {
  asio::io_context loop;
  int calls = 0;
  auto handler = [&](std::span<const std::byte>) { ++calls; };
  auto waiting = std::make_unique<TcpMessageChannel>(tcp::acceptor(loop, tcp::endpoint(kLocalhost, 0)), handler,
                                                     TcpMessageChannel::Options{});
  waiting->start();
  auto listener = std::make_unique<TcpMessageChannel>(tcp::acceptor(loop, tcp::endpoint(kLocalhost, 0)), handler,
                                                      TcpMessageChannel::Options{});
  listener->start();
  tcp::socket socket(loop);
  socket.connect(listener->local_endpoint());
  auto connector = std::make_unique<TcpMessageChannel>(std::move(socket), handler, TcpMessageChannel::Options{});
  connector->start();
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(connector->send(std::vector<std::byte>(1000)));
  loop.poll();  // the accept and the first writes are under way
  bool ready_ran = false;
  waiting->on_ready([&](const std::error_code&) { ready_ran = true; });
  waiting.reset();
  connector.reset();
  listener.reset();
  const int before = calls;
  volley::test::run_bounded(loop, 500ms);
  EXPECT_EQ(calls, before);
  EXPECT_FALSE(ready_ran);
}
