// Reliable, ordered messages over UDP with selective repeat: a sender and a
// receiver on loopback, in one program. The ARQ state machines know nothing of
// sockets or clocks; ArqChannel binds them to a UDP socket and a timer.
#include <cstdio>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <volley/arq/udp_channel.hpp>

namespace arq = volley::arq;
using udp = boost::asio::ip::udp;

int main() {
  boost::asio::io_context loop;
  arq::SenderConfig sender_config;  // selective repeat, window 64, RFC 6298 timeouts
  arq::ReceiverConfig receiver_config;

  int delivered = 0;
  bool in_order = true;
  // No peer given: the receiver answers whoever sends it the first valid packet.
  arq::ArqChannel receiver(loop, udp::socket(loop, udp::endpoint(udp::v4(), 0)), std::nullopt, sender_config,
                           receiver_config, [&](std::span<const std::byte> m) {
                             const std::string text(reinterpret_cast<const char*>(m.data()), m.size());
                             in_order = in_order && text == "reading " + std::to_string(delivered);
                             ++delivered;
                           });
  const udp::endpoint receiver_at(boost::asio::ip::make_address("127.0.0.1"), receiver.local_endpoint().port());
  arq::ArqChannel sender(loop, udp::socket(loop, udp::endpoint(udp::v4(), 0)), receiver_at, sender_config,
                         receiver_config, [](std::span<const std::byte>) {});
  receiver.start();
  sender.start();

  constexpr int kMessages = 1000;
  for (int i = 0; i < kMessages; ++i) {
    const std::string text = "reading " + std::to_string(i);
    if (!sender.send(std::as_bytes(std::span(text)))) std::fprintf(stderr, "message %d refused\n", i);
  }
  // close() flushes: done runs once everything, end of stream included, is acknowledged.
  std::string outcome = "still running";
  sender.close([&](const std::error_code& error) {
    outcome = error ? error.message() : "all acknowledged";
    sender.stop();
  });
  receiver.on_peer_finished([&](const std::error_code&) { receiver.stop(); });
  loop.run_for(std::chrono::seconds(10));

  std::printf("%s; delivered %d of %d %s; %llu packets, %llu retransmissions\n", outcome.c_str(), delivered, kMessages,
              in_order ? "in order" : "OUT OF ORDER",
              static_cast<unsigned long long>(sender.sender().stats().packets_sent),
              static_cast<unsigned long long>(sender.sender().stats().retransmissions));
  return delivered == kMessages && in_order ? 0 : 1;
}
