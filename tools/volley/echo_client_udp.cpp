#include "echo_client_udp.hpp"

#include <cstring>

#include "echo_common.hpp"

namespace volley::tools {

namespace asio = boost::asio;

UdpEchoClient::UdpEchoClient(asio::io_context& loop, const EchoRun& run, EchoClientCounters& counters,
                             std::function<void()> done)
    : socket_(loop),
      loss_timer_(loop),
      run_(run),
      counters_(counters),
      done_(std::move(done)),
      out_(kEchoUdpBatch, run.message_size),
      in_(kEchoUdpBatch, run.message_size + 1),  // one byte more: a longer echo shows as too long
      sent_at_(run.rtt ? run.in_flight : 0) {}

void UdpEchoClient::start(const asio::ip::udp::endpoint& server) {
  boost::system::error_code ec;
  socket_.open(server.protocol(), ec);
  if (!ec) socket_.set_option(asio::socket_base::receive_buffer_size(4 << 20), ec);
  if (!ec) socket_.connect(server, ec);
  if (!ec) socket_.non_blocking(true, ec);
  if (ec) {
    counters_.errors.add();
    if (counters_.first_error.empty()) counters_.first_error = "udp: " + ec.message();
    return finish();
  }
  send_more(run_.in_flight);
  wait_read();
  check_loss();
}

void UdpEchoClient::send_more(std::size_t count) {
  while (count > 0) {
    const std::size_t n = std::min(count, out_.capacity());
    for (std::size_t i = 0; i < n; ++i) {
      const std::span<std::byte> b = out_.buffer(i);
      const std::uint64_t seq = next_sequence_ + i;
      const auto body = run_.pattern->at(seq, b.size() - sizeof seq);
      std::memcpy(b.data(), &seq, sizeof seq);
      std::memcpy(b.data() + sizeof seq, body.data(), body.size());
      out_.set_length(i, b.size());
      if (run_.rtt) sent_at_[seq % sent_at_.size()] = EchoRun::Clock::now();
    }
    std::error_code ec;
    const std::size_t sent = out_.send(socket_.native_handle(), n, false, ec);
    // Datagrams the kernel would not take count as lost when their echoes do not come.
    next_sequence_ += n;
    in_flight_ += n;
    counters_.bytes_sent.add(sent * run_.message_size);
    count -= n;
    if (ec) break;
  }
}

void UdpEchoClient::wait_read() {
  socket_.async_wait(asio::socket_base::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec) return;
    self->drain();
    if (self->socket_.is_open()) self->wait_read();
  });
}

void UdpEchoClient::drain() {
  for (;;) {
    std::error_code ec;
    const std::size_t n = in_.receive(socket_.native_handle(), ec);
    if (ec) {
      // ECONNREFUSED: nobody at the server's port (an ICMP came back); the loss timer handles the rest.
      counters_.errors.add();
      if (counters_.first_error.empty()) counters_.first_error = "udp: " + ec.message();
    }
    if (n == 0) break;
    std::size_t fresh = 0;
    const auto now = EchoRun::Clock::now();
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t len = in_.length(i);
      const std::span<const std::byte> b = in_.buffer(i).first(std::min(len, run_.message_size));
      std::uint64_t seq = 0;
      if (len != run_.message_size) {
        counters_.mismatched_bytes.add(len);
        continue;
      }
      std::memcpy(&seq, b.data(), sizeof seq);
      if (seq < expected_from_ || seq >= next_sequence_) continue;  // late (already counted lost) or bogus
      if (!run_.pattern->matches(seq, b.subspan(sizeof seq))) counters_.mismatched_bytes.add(len);
      if (run_.rtt)
        counters_.rtt_ns.record(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent_at_[seq % sent_at_.size()]).count()));
      ++fresh;
    }
    in_flight_ -= std::min(in_flight_, fresh);
    received_since_check_ += fresh;
    counters_.messages.add(fresh);
    counters_.bytes_received.add(fresh * run_.message_size);
    if (run_.running()) {
      send_more(fresh);
    } else if (in_flight_ == 0) {
      return finish();
    }
  }
}

void UdpEchoClient::check_loss() {
  loss_timer_.expires_after(kLossTimeout);
  loss_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || !self->socket_.is_open()) return;
    if (self->received_since_check_ == 0 && self->in_flight_ > 0) {
      // Nothing came back for a whole timeout: what is out is lost.
      self->counters_.lost.add(self->in_flight_);
      self->counters_.errors.add(self->in_flight_);
      self->expected_from_ = self->next_sequence_;
      self->in_flight_ = 0;
      if (!self->run_.running()) return self->finish();
      self->send_more(self->run_.in_flight);
    }
    self->received_since_check_ = 0;
    self->check_loss();
  });
}

void UdpEchoClient::finish() {
  boost::system::error_code ignored;
  loss_timer_.cancel();
  socket_.close(ignored);
  counters_.finished = EchoRun::Clock::now();
  if (done_) std::exchange(done_, nullptr)();
}

}  // namespace volley::tools
