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
