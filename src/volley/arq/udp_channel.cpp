#include <volley/arq/udp_channel.hpp>

#include <volley/net/udp_drops.hpp>

namespace volley::arq {

namespace asio = boost::asio;
using asio::ip::udp;

ArqChannel::ArqChannel(asio::io_context& loop, udp::socket socket, std::optional<udp::endpoint> peer,
                       const SenderConfig& sender, const ReceiverConfig& receiver, MessageHandler on_message,
                       std::optional<FecConfig> fec)
    : socket_(std::move(socket)),
      timer_(loop),
      peer_(peer),
      conversation_(receiver.conversation),
      endpoint_(sender, receiver, fec),
      on_message_(std::move(on_message)),
      buffer_(65536) {
  socket_.non_blocking(true);
}

Nanos ArqChannel::now() {
  // CLOCK_MONOTONIC: comparable between processes of one machine, so a sender's
  // input time and a receiver's delivery time can be subtracted.
  return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch());
}

void ArqChannel::start() {
  receive();
  service();
}

bool ArqChannel::send(std::span<const std::byte> message) {
  const bool accepted = endpoint_.send(message);
  if (accepted) service();
  return accepted;
}

void ArqChannel::close(Done done) {
  close_done_ = std::move(done);
  endpoint_.close();
  service();
}

std::uint64_t ArqChannel::kernel_drops() {
  if (socket_.is_open()) kernel_drops_ = net::udp_receive_drops(socket_.native_handle()).value_or(kernel_drops_);
  return kernel_drops_;
}

void ArqChannel::stop() {
  kernel_drops();  // the last count, before the socket goes
  stopped_ = true;
  boost::system::error_code ignored;
  timer_.cancel();
  socket_.close(ignored);
}

void ArqChannel::transmit(std::span<const std::byte> packet) {
  if (!peer_) return;  // a listener has nobody to answer yet
  boost::system::error_code ec;
  socket_.send_to(asio::buffer(packet.data(), packet.size()), *peer_, 0, ec);
  if (ec) stats_.send_failures += 1;  // as good as a loss: the protocol recovers
}

void ArqChannel::receive() {
  socket_.async_receive_from(asio::buffer(buffer_), from_, [this](const boost::system::error_code& ec, std::size_t n) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (!ec) {
      const std::span<const std::byte> packet(buffer_.data(), n);
      const Nanos t = now();
      if (!peer_) {
        // A listener binds to a sender, never to whatever arrives first: only a
        // data packet of its own conversation with a valid checksum will do.
        const Decoded d = decode(packet);
        if (d.error == PacketError::none && !d.is_ack && d.data.conversation == conversation_) peer_ = from_;
      }
      if (!peer_ || from_ != *peer_)
        stats_.foreign_datagrams += 1;
      else
        endpoint_.on_datagram(packet, t, [this](std::span<const std::byte> p) { transmit(p); }, on_message_);
    }
    // Errors such as ICMP port unreachable only mean the peer is not there yet.
    service();
    receive();
  });
}

void ArqChannel::service() {
  if (stopped_) return;
  const Nanos t = now();
  endpoint_.poll(t, [this](std::span<const std::byte> p) { transmit(p); });
  const ArqSender& sender = endpoint_.sender();
  if (close_done_ && (sender.finished() || sender.failed())) {
    auto done = std::move(close_done_);
    close_done_ = nullptr;
    done(sender.error());
  }
  if (peer_done_ && endpoint_.receiver().finished()) {
    auto done = std::move(peer_done_);
    peer_done_ = nullptr;
    done({});
  }
  if (const auto next = endpoint_.next_timeout()) {
    timer_.expires_at(std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(*next)));
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) service();
    });
  } else {
    timer_.cancel();
  }
}

}  // namespace volley::arq
