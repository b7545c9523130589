#include "echo_client_udp.hpp"

#include <cstring>

#include "echo_common.hpp"

namespace volley::tools {

namespace asio = boost::asio;

UdpEchoClient::UdpEchoClient(asio::io_context& loop, const EchoRun& run, EchoClientCounters& counters,
                             std::function<void()> done)
    : loop_(loop), loss_timer_(loop), run_(run), counters_(counters), done_(std::move(done)) {}

void UdpEchoClient::start(const asio::ip::udp::endpoint& server) {
  boost::system::error_code ec;
  asio::ip::udp::socket socket(loop_);
  socket.open(server.protocol(), ec);
  if (!ec) socket.set_option(asio::socket_base::receive_buffer_size(4 << 20), ec);
  if (!ec) socket.connect(server, ec);
  if (ec) {
    counters_.errors.add();
    if (counters_.first_error.empty()) counters_.first_error = "udp: " + ec.message();
    return finish();
  }
  // One byte more than a message: a longer echo shows as too long (truncated).
  net::UdpEndpointOptions options;
  options.batch = kEchoUdpBatch;
  options.max_datagram = run_.message_size + 1;
  endpoint_ = std::make_unique<net::UdpEndpoint>(std::move(socket), options);
  send_more(run_.in_flight);
  // Held weakly: the endpoint belongs to this client. The loss timer keeps the
  // client alive until finish() cancels it, and the endpoint is stopped by then.
  endpoint_->start(
      [weak = weak_from_this()](std::span<const std::byte> d, const auto&) {
        if (const auto self = weak.lock()) self->on_echo(d);
      },
      [weak = weak_from_this()] {
        if (const auto self = weak.lock()) self->after_batch();
      });
  check_loss();
}

void UdpEchoClient::send_more(std::size_t count) {
  // Built in place in the endpoint's queue; they leave together at the end of
  // this batch or loop turn. Datagrams the kernel does not take count as lost
  // when their echoes do not come.
  const auto now = EchoRun::Clock::now();
  for (std::size_t i = 0; i < count; ++i) {
    const std::span<std::byte> b = endpoint_->prepare(run_.message_size);
    const std::uint64_t seq = next_sequence_++;
    const auto body = run_.pattern->at(seq, b.size() - sizeof seq);
    std::memcpy(b.data(), &seq, sizeof seq);
    std::memcpy(b.data() + sizeof seq, body.data(), body.size());
    window_.push_back({now, false});
  }
  in_flight_ += count;
  counters_.bytes_sent.add(count * run_.message_size);
}

void UdpEchoClient::on_echo(std::span<const std::byte> b) {
  if (b.size() != run_.message_size) {
    counters_.mismatched_bytes.add(b.size());
    return;
  }
  std::uint64_t seq = 0;
  std::memcpy(&seq, b.data(), sizeof seq);
  // Late (already counted lost), duplicated, or never sent: not a fresh echo.
  if (seq < window_start_ || seq >= next_sequence_) return;
  Outstanding& o = window_[seq - window_start_];
  if (o.answered) return;
  o.answered = true;
  if (!run_.pattern->matches(seq, b.subspan(sizeof seq))) counters_.mismatched_bytes.add(b.size());
  if (run_.rtt)
    counters_.rtt_ns.record(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(EchoRun::Clock::now() - o.sent).count()));
  ++fresh_;
}

void UdpEchoClient::after_batch() {
  const net::UdpEndpointStats& s = endpoint_->stats();
  if (s.truncated != truncated_counted_) {
    counters_.mismatched_bytes.add((s.truncated - truncated_counted_) * (run_.message_size + 1));
    truncated_counted_ = s.truncated;
  }
  if (s.receive_errors + s.send_failures != errors_counted_) {
    // ECONNREFUSED: nobody at the server's port (an ICMP came back); the loss timer handles the rest.
    counters_.errors.add(s.receive_errors + s.send_failures - errors_counted_);
    errors_counted_ = s.receive_errors + s.send_failures;
    if (counters_.first_error.empty()) counters_.first_error = "udp: " + endpoint_->last_error().message();
  }
  while (!window_.empty() && window_.front().answered) {
    window_.pop_front();
    ++window_start_;
  }
  const std::size_t fresh = std::exchange(fresh_, 0);
  in_flight_ -= std::min(in_flight_, fresh);
  counters_.messages.add(fresh);
  counters_.bytes_received.add(fresh * run_.message_size);
  if (run_.running()) {
    send_more(fresh);
  } else if (in_flight_ == 0) {
    finish();
  }
}

void UdpEchoClient::check_loss() {
  loss_timer_.expires_after(run_.loss_timeout / 4);
  loss_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || !self->endpoint_->is_open()) return;
    // Every datagram out for longer than the timeout is lost; each is replaced.
    const auto cutoff = EchoRun::Clock::now() - self->run_.loss_timeout;
    std::size_t lost = 0;
    while (!self->window_.empty() && self->window_.front().sent < cutoff) {
      if (!self->window_.front().answered) ++lost;
      self->window_.pop_front();
      ++self->window_start_;
    }
    if (lost > 0) {
      self->counters_.lost.add(lost);
      self->counters_.errors.add(lost);
      self->in_flight_ -= std::min(self->in_flight_, lost);
      if (self->run_.running()) {
        self->send_more(lost);
      } else if (self->in_flight_ == 0) {
        return self->finish();
      }
    }
    self->check_loss();
  });
}

void UdpEchoClient::finish() {
  loss_timer_.cancel();
  if (endpoint_) endpoint_->stop();
  counters_.finished = EchoRun::Clock::now();
  if (done_) std::exchange(done_, nullptr)();
}

}  // namespace volley::tools
