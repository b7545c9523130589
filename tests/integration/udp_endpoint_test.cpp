// net::UdpEndpoint on loopback: batches both ways, order kept, oversize
// datagrams dropped and counted, refused sends counted without losing the rest
// of the batch, sends from outside a receive batch leaving together, shared
// receive buffers, and an endpoint gone before its posted work runs.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <volley/net/udp_endpoint.hpp>

#include "udp_helpers.hpp"
#include "run_until.hpp"

namespace volley::net {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;
using test::UdpSocket;
using namespace std::chrono_literals;

udp::endpoint loopback(int port) { return {asio::ip::address_v4::loopback(), static_cast<std::uint16_t>(port)}; }

std::vector<std::byte> numbered(std::uint32_t n, std::size_t size = 16) {
  std::vector<std::byte> d(size, std::byte{0x5A});
  for (int i = 0; i < 4; ++i) d[static_cast<std::size_t>(i)] = static_cast<std::byte>(n >> (8 * i));
  return d;
}
std::uint32_t number_of(std::span<const std::byte> d) {
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::to_integer<std::uint32_t>(d[static_cast<std::size_t>(i)]) << (8 * i);
  return n;
}

// The numbers of the next `count` datagrams on `socket` (a missing one ends the list).
std::vector<std::uint32_t> received_numbers(const UdpSocket& socket, std::size_t count) {
  std::vector<std::uint32_t> got;
  for (std::size_t i = 0; i < count; ++i) {
    const auto d = socket.receive(1000ms);
    if (!d) break;
    got.push_back(number_of(*d));
  }
  return got;
}

// Runs the loop until `done` or 200 rounds of at most 10 ms each.
template <class Done>
void run_until(asio::io_context& loop, Done done) {
  for (int i = 0; i < 200 && !done(); ++i) {
    loop.restart();
    test::run_bounded(loop, 10ms);
  }
}

TEST(UdpEndpoint, EchoesABurstInBatchesAndInOrder) {
  asio::io_context loop;
  UdpEndpointOptions options;
  options.batch = 32;
  UdpEndpoint endpoint(loop, loopback(0), options);
  std::size_t handled = 0;
  endpoint.start([&](std::span<const std::byte> d, const udp::endpoint& from) {
    ++handled;
    endpoint.send(d, from);
  });
  UdpSocket client;
  constexpr std::uint32_t kCount = 96;  // three full batches, well inside a default receive buffer
  // All queued before the loop runs: the endpoint finds them waiting and takes 32 at a time.
  for (std::uint32_t i = 0; i < kCount; ++i) client.send_to(endpoint.local_endpoint().port(), numbered(i));
  run_until(loop, [&] { return handled == kCount; });
  ASSERT_EQ(handled, kCount);

  for (std::uint32_t i = 0; i < kCount; ++i) {
    const auto echo = client.receive(1000ms);
    ASSERT_TRUE(echo) << "echo " << i << " missing";
    EXPECT_EQ(*echo, numbered(i)) << "echo " << i << " out of order or changed";
  }
  const UdpEndpointStats& s = endpoint.stats();
  EXPECT_EQ(s.datagrams_received, kCount);
  EXPECT_EQ(s.bytes_received, kCount * 16);
  EXPECT_EQ(s.datagrams_sent, kCount);
  EXPECT_EQ(s.send_failures, 0u);
  EXPECT_LE(s.receive_calls, (kCount + 31) / 32) << "a waiting burst is taken a batch per call";
  EXPECT_LE(s.send_calls, s.receive_calls) << "a batch's replies leave in one call";
}

TEST(UdpEndpoint, ADatagramLargerThanTheLimitIsDroppedAndCountedNeverDeliveredCut) {
  asio::io_context loop;
  UdpEndpointOptions options;
  options.max_datagram = 100;
  UdpEndpoint endpoint(loop, loopback(0), options);
  std::vector<std::size_t> sizes;
  endpoint.start([&](std::span<const std::byte> d, const udp::endpoint&) { sizes.push_back(d.size()); });
  UdpSocket client;
  const int port = endpoint.local_endpoint().port();
  client.send_to(port, std::vector<std::byte>(101));
  client.send_to(port, std::vector<std::byte>(100));
  client.send_to(port, std::vector<std::byte>(5000));
  client.send_to(port, std::vector<std::byte>(0));
  run_until(loop, [&] { return sizes.size() + endpoint.stats().truncated == 4; });
  EXPECT_EQ(sizes, (std::vector<std::size_t>{100, 0}));
  EXPECT_EQ(endpoint.stats().truncated, 2u);
  EXPECT_EQ(endpoint.stats().datagrams_received, 2u);
}

TEST(UdpEndpoint, ARefusedDatagramIsCountedAndTheRestOfItsBatchStillLeaves) {
  asio::io_context loop;
  UdpEndpoint endpoint(loop, loopback(0));
  UdpSocket receiver;
  const udp::endpoint to = loopback(receiver.port());
  endpoint.send(numbered(1), to);
  endpoint.send(std::vector<std::byte>(70000), to);  // over the most an IPv4 datagram carries: EMSGSIZE
  endpoint.send(numbered(2), to);
  EXPECT_EQ(endpoint.queued(), 3u);
  endpoint.flush();
  EXPECT_EQ(endpoint.queued(), 0u);
  EXPECT_EQ(endpoint.stats().send_failures, 1u);
  EXPECT_EQ(endpoint.stats().datagrams_sent, 2u);
  EXPECT_EQ(endpoint.last_error(), std::errc::message_size);
  EXPECT_EQ(received_numbers(receiver, 2), (std::vector<std::uint32_t>{1, 2}));
}

TEST(UdpEndpoint, SendsMadeOutsideAReceiveBatchLeaveTogetherAtTheEndOfTheLoopTurn) {
  asio::io_context loop;
  UdpEndpoint endpoint(loop, loopback(0));
  UdpSocket receiver;
  asio::post(loop, [&] {
    for (std::uint32_t i = 0; i < 10; ++i) endpoint.send(numbered(i), loopback(receiver.port()));
    EXPECT_EQ(endpoint.queued(), 10u) << "nothing leaves before the handler returns";
  });
  loop.run();
  EXPECT_EQ(endpoint.queued(), 0u);
  EXPECT_EQ(endpoint.stats().send_calls, 1u);
  EXPECT_EQ(endpoint.stats().datagrams_sent, 10u);
  EXPECT_EQ(received_numbers(receiver, 10), (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(UdpEndpoint, AFullBatchLeavesAtOnceAndPreparedDatagramsAreSentAsFilled) {
  asio::io_context loop;
  UdpEndpointOptions options;
  options.batch = 4;
  UdpEndpoint endpoint(loop, loopback(0), options);
  UdpSocket receiver;
  for (std::uint32_t i = 0; i < 6; ++i) {
    const std::span<std::byte> b = endpoint.prepare(16, loopback(receiver.port()));
    const auto d = numbered(i);
    std::copy(d.begin(), d.end(), b.begin());
  }
  EXPECT_EQ(endpoint.stats().datagrams_sent, 4u) << "the fifth found the batch full and sent it";
  EXPECT_EQ(endpoint.queued(), 2u);
  loop.run();
  EXPECT_EQ(endpoint.stats().datagrams_sent, 6u);
  for (std::uint32_t i = 0; i < 6; ++i) {
    const auto d = receiver.receive(1000ms);
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, numbered(i));
  }
}

// Runs of equal sizes to one destination go down as one segmented buffer when
// the option is on; either way the receivers see the same datagrams.
class Segmentation : public ::testing::TestWithParam<bool> {};

TEST_P(Segmentation, DatagramBoundariesSurviveRunsOfEqualSizesMixedSizesAndDestinations) {
  asio::io_context loop;
  UdpEndpointOptions options;
  options.segmentation_offload = GetParam();
  options.batch = 64;
  UdpEndpoint endpoint(loop, loopback(0), options);
  UdpSocket a, b;
  struct Sent {
    const UdpSocket* to;
    std::uint32_t number;
    std::size_t size;
  };
  // A run of five, a shorter last one (may join the run), a longer one (may not),
  // a switch of destination, an empty datagram, and a run of the largest that fit 64 KiB.
  const std::vector<Sent> plan = {{&a, 0, 100}, {&a, 1, 100}, {&a, 2, 100}, {&a, 3, 100}, {&a, 4, 100},
                                  {&a, 5, 40},  {&a, 6, 100}, {&b, 7, 100}, {&b, 8, 100}, {&a, 9, 100},
                                  {&a, 10, 4},  {&b, 11, 9000}, {&b, 12, 9000}, {&b, 13, 9000}, {&b, 14, 9000},
                                  {&b, 15, 9000}, {&b, 16, 9000}, {&b, 17, 9000}, {&b, 18, 9000}};
  for (const Sent& s : plan) endpoint.send(numbered(s.number, s.size), loopback(s.to->port()));
  endpoint.send({}, loopback(a.port()));
  endpoint.flush();
  EXPECT_EQ(endpoint.stats().datagrams_sent, plan.size() + 1);
  EXPECT_EQ(endpoint.stats().send_failures, 0u);
  for (const UdpSocket* socket : {&a, &b}) {
    for (const Sent& s : plan) {
      if (s.to != socket) continue;
      const auto d = socket->receive(1000ms);
      ASSERT_TRUE(d) << "datagram " << s.number << " missing";
      EXPECT_EQ(*d, numbered(s.number, s.size)) << "datagram " << s.number << " cut, joined or changed";
    }
  }
  const auto empty = a.receive(1000ms);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

INSTANTIATE_TEST_SUITE_P(UdpEndpoint, Segmentation, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "offload" : "one_by_one"; });

TEST(UdpEndpoint, EndpointsSharingReceiveBuffersEachGetTheirOwnDatagrams) {
  asio::io_context loop;
  UdpEndpointOptions options;
  options.receive_buffers = std::make_shared<UdpReceiveBuffers>(8, 2048);
  UdpEndpoint a(loop, loopback(0), options), b(loop, loopback(0), options);
  std::vector<std::uint32_t> got_a, got_b;
  a.start([&](std::span<const std::byte> d, const udp::endpoint&) { got_a.push_back(number_of(d)); });
  b.start([&](std::span<const std::byte> d, const udp::endpoint&) { got_b.push_back(number_of(d)); });
  UdpSocket client;
  std::vector<std::uint32_t> want_a, want_b;
  for (std::uint32_t i = 0; i < 50; ++i) {
    const bool to_a = i % 3 != 0;
    client.send_to((to_a ? a : b).local_endpoint().port(), numbered(i, 1000));
    (to_a ? want_a : want_b).push_back(i);
  }
  run_until(loop, [&] { return got_a.size() + got_b.size() == 50; });
  EXPECT_EQ(got_a, want_a);
  EXPECT_EQ(got_b, want_b);
}

TEST(UdpEndpoint, AHandlerThatStopsTheEndpointEndsTheBatchThere) {
  asio::io_context loop;
  UdpEndpoint endpoint(loop, loopback(0));
  UdpSocket client;
  std::vector<std::uint32_t> got;
  endpoint.start([&](std::span<const std::byte> d, const udp::endpoint& from) {
    got.push_back(number_of(d));
    endpoint.send(d, from);  // queued before the stop: it still leaves
    if (got.size() == 3) endpoint.stop();
  });
  for (std::uint32_t i = 0; i < 10; ++i) client.send_to(endpoint.local_endpoint().port(), numbered(i));
  run_until(loop, [&] { return !endpoint.is_open(); });
  loop.restart();
  test::run_bounded(loop, 20ms);
  EXPECT_EQ(got, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_FALSE(endpoint.is_open());
  EXPECT_EQ(received_numbers(client, 3), (std::vector<std::uint32_t>{0, 1, 2}));
}

TEST(UdpEndpoint, QueuedSendsLeaveWhenItIsDestroyedAndWorkPostedForItThenDoesNothing) {
  asio::io_context loop;
  UdpSocket receiver;
  {
    UdpEndpoint endpoint(loop, loopback(0));
    endpoint.start([](std::span<const std::byte>, const udp::endpoint&) {});
    endpoint.send(numbered(7), loopback(receiver.port()));  // posts a flush
    receiver.send_to(endpoint.local_endpoint().port(), numbered(8));
  }
  const auto d = receiver.receive(1000ms);
  ASSERT_TRUE(d) << "queued before the end: sent by the destructor";
  EXPECT_EQ(number_of(*d), 7u);
  loop.run();  // the posted flush and the aborted wait find nothing (the sanitizer build checks)
  EXPECT_FALSE(receiver.receive(50ms)) << "sent once, not again";
}

TEST(UdpEndpoint, AConnectedEndpointSendsToItsPeerAndCountsTheRefusal) {
  asio::io_context loop;
  UdpEndpoint endpoint(loop, loopback(0));
  int closed_port;
  {
    UdpSocket gone;
    closed_port = gone.port();
  }
  std::error_code ec;
  endpoint.connect(loopback(closed_port), ec);
  ASSERT_FALSE(ec);
  endpoint.start([](std::span<const std::byte>, const udp::endpoint&) {});
  endpoint.send(numbered(1));
  // Loopback answers with ICMP port unreachable at once; the connected socket reports it to a read.
  run_until(loop, [&] { return endpoint.stats().receive_errors > 0; });
  EXPECT_EQ(endpoint.stats().datagrams_sent, 1u);
  EXPECT_EQ(endpoint.stats().receive_errors, 1u);
  EXPECT_EQ(endpoint.last_error(), std::errc::connection_refused);
}

}  // namespace
}  // namespace volley::net
