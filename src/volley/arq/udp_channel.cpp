#include <volley/arq/udp_channel.hpp>

#include <stdexcept>

namespace volley::arq {

namespace asio = boost::asio;
using asio::ip::udp;

namespace {
udp::socket on_executor(udp::socket socket, const asio::any_io_executor& executor, const char* who) {
  if (socket.get_executor() != executor)
    throw std::invalid_argument(std::string(who) + ": the socket was made on another executor than the channel's");
  return socket;
}
}  // namespace

ArqChannel::ArqChannel(const asio::any_io_executor& executor, udp::socket socket, std::optional<udp::endpoint> peer,
                       const SenderConfig& sender, const ReceiverConfig& receiver, MessageHandler on_message,
                       std::optional<FecConfig> fec)
    : udp_(on_executor(std::move(socket), executor, "ArqChannel")),
      timer_(executor),
      peer_(peer),
      conversation_(receiver.conversation),
      endpoint_(sender, receiver, fec),
      on_message_(std::move(on_message)) {}

Nanos ArqChannel::now() {
  // CLOCK_MONOTONIC: comparable between processes of one machine, so a sender's
  // input time and a receiver's delivery time can be subtracted.
  return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch());
}

void ArqChannel::start() {
  // One service per receive batch: acks for the whole batch, one timer update.
  udp_.start([this](std::span<const std::byte> packet, const udp::endpoint& from) { on_datagram(packet, from); },
             [this] { service(); });
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

void ArqChannel::stop() {
  stopped_ = true;
  timer_.cancel();
  udp_.stop();  // sends what is queued, keeps the last drop count
}

void ArqChannel::transmit(std::span<const std::byte> packet) {
  if (!peer_) return;  // a listener has nobody to answer yet
  // Queued: leaves with the rest of this batch or loop turn. A datagram the
  // kernel refuses is as good as a loss (counted): the protocol recovers.
  udp_.send(packet, *peer_);
}

void ArqChannel::on_datagram(std::span<const std::byte> packet, const udp::endpoint& from) {
  if (stopped_) return;
  if (!peer_) {
    // A listener binds to a sender, never to whatever arrives first: only a
    // data packet of its own conversation with a valid checksum will do, and
    // not one that opens and closes the conversation at once (end of stream
    // at sequence 0): a single forged datagram would end the listener's
    // conversation with nothing delivered, and the real sender be foreign.
    const Decoded d = decode(packet);
    const bool empty_conversation = d.data.fin && d.data.sequence == 0;
    if (d.error == PacketError::none && !d.is_ack && d.data.conversation == conversation_ && !empty_conversation)
      peer_ = from;
  }
  if (!peer_ || from != *peer_) {
    stats_.foreign_datagrams += 1;
    return;
  }
  // Errors such as ICMP port unreachable only mean the peer is not there yet (the endpoint counts them).
  endpoint_.on_datagram(packet, now(), [this](std::span<const std::byte> p) { transmit(p); }, on_message_);
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
