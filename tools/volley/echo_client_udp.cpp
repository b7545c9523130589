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
      in_(kEchoUdpBatch, run.message_size + 1) {}  // one byte more: a longer echo shows as too long

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
    }
    const auto now = EchoRun::Clock::now();
    for (std::size_t i = 0; i < n; ++i) window_.push_back({now, false});
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
      if (len != run_.message_size) {
        counters_.mismatched_bytes.add(len);
        continue;
      }
      const std::span<const std::byte> b = in_.buffer(i).first(len);
      std::uint64_t seq = 0;
      std::memcpy(&seq, b.data(), sizeof seq);
      // Late (already counted lost), duplicated, or never sent: not a fresh echo.
      if (seq < window_start_ || seq >= next_sequence_) continue;
      Outstanding& o = window_[seq - window_start_];
      if (o.answered) continue;
      o.answered = true;
      if (!run_.pattern->matches(seq, b.subspan(sizeof seq))) counters_.mismatched_bytes.add(len);
      if (run_.rtt)
        counters_.rtt_ns.record(
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - o.sent).count()));
      ++fresh;
    }
    while (!window_.empty() && window_.front().answered) {
      window_.pop_front();
      ++window_start_;
    }
    in_flight_ -= std::min(in_flight_, fresh);
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
  loss_timer_.expires_after(kLossTimeout / 4);
  loss_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || !self->socket_.is_open()) return;
    // Every datagram out for longer than the timeout is lost; each is replaced.
    const auto cutoff = EchoRun::Clock::now() - kLossTimeout;
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
  boost::system::error_code ignored;
  loss_timer_.cancel();
  socket_.close(ignored);
  counters_.finished = EchoRun::Clock::now();
  if (done_) std::exchange(done_, nullptr)();
}

}  // namespace volley::tools
