// net::udp_receive_drops reads the kernel's count of datagrams a socket lost
// to a full receive buffer.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include <volley/net/udp_drops.hpp>

namespace asio = boost::asio;
using asio::ip::udp;

TEST(UdpReceiveDrops, CountsWhatAFullReceiveBufferLostAndOnlyForUdpSockets) {
  asio::io_context loop;
  udp::socket sink(loop, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  sink.set_option(asio::socket_base::receive_buffer_size(64 * 1024));
  ASSERT_EQ(volley::net::udp_receive_drops(sink.native_handle()), std::optional<std::uint64_t>(0));

  udp::socket source(loop, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const std::vector<std::byte> datagram(1000, std::byte{1});
  constexpr std::uint64_t kSent = 2000;  // 2 MB into a 64 KiB (128 KiB as the kernel books it) buffer
  for (std::uint64_t i = 0; i < kSent; ++i) source.send_to(asio::buffer(datagram), sink.local_endpoint());
  std::uint64_t queued = 0;
  std::vector<std::byte> in(2000);
  while (sink.available() > 0) {
    sink.receive(asio::buffer(in));
    ++queued;
  }
  const auto drops = volley::net::udp_receive_drops(sink.native_handle());
  ASSERT_TRUE(drops.has_value());
  EXPECT_GT(*drops, 0u);
  EXPECT_EQ(*drops + queued, kSent);  // every datagram was either queued or counted

  asio::ip::tcp::acceptor tcp(loop, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  EXPECT_FALSE(volley::net::udp_receive_drops(tcp.native_handle()).has_value());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_FALSE(volley::net::udp_receive_drops(fds[0]).has_value());
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_FALSE(volley::net::udp_receive_drops(-1).has_value());
}

// The table read once answers for every socket as the single reads do.
TEST(UdpReceiveDrops, OneTableReadAnswersForManySockets) {
  asio::io_context loop;
  std::vector<udp::socket> sinks;
  for (int i = 0; i < 3; ++i) {
    sinks.emplace_back(loop, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    sinks.back().set_option(asio::socket_base::receive_buffer_size(64 * 1024));
  }
  udp::socket source(loop, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const std::vector<std::byte> datagram(1000, std::byte{1});
  for (std::size_t s = 0; s < sinks.size(); ++s)  // 0, 1000 and 2000 datagrams: none, then some lost
    for (std::size_t i = 0; i < s * 1000; ++i) source.send_to(asio::buffer(datagram), sinks[s].local_endpoint());
  const auto table = volley::net::UdpDropTable::read();
  for (auto& sink : sinks) {
    const auto single = volley::net::udp_receive_drops(sink.native_handle());
    ASSERT_TRUE(single.has_value());
    EXPECT_EQ(table.drops_of(sink.native_handle()), single);
  }
  EXPECT_EQ(table.drops_of(sinks[0].native_handle()), std::optional<std::uint64_t>(0));
  EXPECT_GT(table.drops_of(sinks[2].native_handle()).value_or(0), 0u);
  asio::ip::tcp::acceptor tcp(loop, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  EXPECT_FALSE(table.drops_of(tcp.native_handle()).has_value());
  udp::socket later(loop, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  EXPECT_FALSE(table.drops_of(later.native_handle()).has_value()) << "opened after the read: not in the table";
}
