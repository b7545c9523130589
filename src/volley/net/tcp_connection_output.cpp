// TcpConnection's output: sends queued, corked and gathered, written straight
// to the socket when it takes them, the rest asynchronously; the high and low
// water crossings. The rest of the connection is in tcp_connection.cpp.
#include <volley/net/tcp_connection.hpp>

#include <cstring>
#include <string>
#include <utility>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "connection_input.hpp"

namespace volley::net {

namespace asio = boost::asio;

namespace {
// A write that failed for good, not one the socket's full buffer put off.
bool write_failed(const boost::system::error_code& ec) {
  return ec && ec != asio::error::would_block && ec != asio::error::try_again;
}
}  // namespace

// A copy is built in place too: over shared memory it is then the only one.
bool TcpConnection::send(std::span<const std::byte> bytes) {
  return send_in_place(bytes.size(), [&](std::span<std::byte> room) {
    if (!bytes.empty()) std::memcpy(room.data(), bytes.data(), bytes.size());
    return bytes.size();
  });
}

bool TcpConnection::send(std::span<const std::byte> head, std::span<const std::byte> body) {
  return send_in_place(head.size() + body.size(), [&](std::span<std::byte> room) {
    if (!head.empty()) std::memcpy(room.data(), head.data(), head.size());
    if (!body.empty()) std::memcpy(room.data() + head.size(), body.data(), body.size());
    return room.size();
  });
}

std::span<std::byte> TcpConnection::reserve_send(std::size_t size) {
  // Straight in the transport's memory (a shared-memory ring) when nothing of
  // ours waits to go before it: the message is then written exactly once.
  if (transport_ && !queue_.has_pending() && !queue_.in_flight()) {
    const std::span<std::byte> room = transport_->reserve_output(size);
    reserved_in_transport_ = !room.empty();
    if (reserved_in_transport_) return room;
  }
  return queue_.append_space(size);
}

void TcpConnection::commit_send(std::size_t reserved, std::size_t used) {
  if (std::exchange(reserved_in_transport_, false)) {
    transport_->commit_output(used);
    built_in_place_ += used;
  } else {
    queue_.give_back(reserved - used);
  }
  sent();
}

void TcpConnection::write_in_place() {
  boost::system::error_code ec;
  transport_->write_some({}, ec);  // publishes what was built, with no bytes of its own
  const std::size_t bytes = std::exchange(built_in_place_, 0);
  if (write_failed(ec)) {
    fail_write_soon(ec);
    return;
  }
  if (in_flush_completion_) {  // as flush(): no recursion once per message
    asio::post(socket_.get_executor(), [self = shared_from_this(), bytes] { self->report_written(bytes); });
    return;
  }
  in_flush_completion_ = true;
  report_written(bytes);
  in_flush_completion_ = false;
}

void TcpConnection::sent() {
  note_output_grew();  // the handler may close the connection from its on_backpressure
  if (cork_depth_ == 0 && state_ != State::closed) maybe_flush();
}

bool TcpConnection::send_borrowed_body(std::span<const std::byte> head, std::span<const std::byte> body) {
  if (state_ != State::open) return false;
  queue_.append(head);
  queue_.append_borrowed(body);
  sent();
  return true;
}

bool TcpConnection::send_borrowed(std::span<const std::byte> bytes) {
  if (state_ != State::open) return false;
  queue_.append_borrowed(bytes);
  sent();
  return true;
}

void TcpConnection::maybe_flush() {
  // What was built in place comes first: nothing was queued when it was.
  if (built_in_place_ > 0) write_in_place();
  if (state_ == State::closed) return;
  // One write at a time: a second async_write on the socket would interleave bytes.
  if (!queue_.in_flight() && queue_.has_pending()) flush();
}

void TcpConnection::flush() {
  const auto segments = queue_.start_batch();
  gather_.clear();
  std::size_t total = 0;
  for (const auto& seg : segments) {
    gather_.emplace_back(seg.data(), seg.size());
    total += seg.size();
  }
  // Most batches fit in the socket's send buffer: write now, without a round
  // through the reactor (that costs an extra epoll_wait per message). Only what
  // the kernel does not take goes through async_write. The socket is
  // non-blocking (start()), so this never waits.
  boost::system::error_code ec;
  const std::size_t n = write_socket(ec);
  if (!ec && n == total && !transport_output_waiting()) {
    if (in_flush_completion_) {
      // Finished inside a completion already on the stack: complete on the
      // next turn of the loop instead of recursing once per message.
      asio::post(socket_.get_executor(), [self = shared_from_this(), n] { self->on_write({}, n); });
    } else {
      in_flush_completion_ = true;
      on_write({}, n);
      in_flush_completion_ = false;
    }
    return;
  }
  if (write_failed(ec)) {
    fail_write_soon(ec);
    return;
  }
  write_rest(ec ? 0 : n);
}

bool TcpConnection::transport_output_waiting() const {
  return transport_ && transport_->has_buffered_output();
}

std::size_t TcpConnection::write_socket(boost::system::error_code& ec) {
  if (transport_) return transport_->write_some(gather_, ec);
  return socket_.write_some(gather_, ec);
}

void TcpConnection::write_rest(std::size_t already) {
  // Skip what was written; the rest goes out asynchronously.
  std::size_t skip = already;
  std::size_t first = 0;
  while (first < gather_.size() && skip >= gather_[first].size()) skip -= gather_[first++].size();
  gather_.erase(gather_.begin(), gather_.begin() + static_cast<std::ptrdiff_t>(first));
  if (!gather_.empty()) gather_.front() += skip;
  if (!transport_) {
    if (const boost::system::error_code ec = input_->use_reactor()) {
      fail_write_soon(ec);
      return;
    }
    asio::async_write(socket_, gather_, [self = shared_from_this(), already](const boost::system::error_code& wec, std::size_t m) {
      self->on_write(wec, already + m);
    });
    return;
  }
  // Through a transport: wait for what it asked for, write again, until all is taken.
  const StreamTransport::Wait blocked = transport_->blocked_on();
  const auto wait = blocked == StreamTransport::Wait::read || blocked == StreamTransport::Wait::own_descriptor
                        ? blocked
                        : StreamTransport::Wait::write;
  wait_then(wait, [self = shared_from_this(), already](const boost::system::error_code& wec) {
    if (self->state_ == State::closed) return;
    if (wec) return self->on_write(wec, already);
    boost::system::error_code ec;
    const std::size_t m = self->write_socket(ec);
    if (write_failed(ec)) return self->on_write(ec, already);
    std::size_t left = 0;
    for (const auto& b : self->gather_) left += b.size();
    if (!ec && m == left && !self->transport_output_waiting()) return self->on_write({}, already + m);
    self->write_rest(ec ? 0 : m);  // `already` stays what the completion reports; the gather moves on
  });
}

void TcpConnection::fail_write_soon(const boost::system::error_code& ec) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), ec] { self->on_write(ec, 0); });
}

void TcpConnection::on_write(const boost::system::error_code& ec, std::size_t /*n*/) {
  if (state_ == State::closed) return;
  if (ec) return finish({CloseReason::Kind::io_error, ec.message(), ec});
  report_written(queue_.finish_batch());
}

void TcpConnection::report_written(std::size_t bytes) {
  if (state_ == State::closed) return;
  active_ = true;
  {
    const Corked corked(*this);  // what the handler sends now goes out together, at its end
    note_output_shrank();        // first: on_written sees whether output is still full
    if (state_ == State::closed) return;
    handler_->on_written(*this, bytes);
  }
  // Not while bytes queued behind what was built in place still wait for
  // their flush (maybe_flush reports the one before it writes the other).
  if (state_ == State::flushing && !queue_.in_flight() && !queue_.has_pending()) half_close();
  hold_while_paused();  // the write held the connection; a pause outlasting it must too
}

void TcpConnection::note_output_grew() {
  if (output_full_ || limits_.high_water == 0 || queue_.queued_bytes() < limits_.high_water) return;
  output_full_ = true;
  if (limits_.slow_consumer_timeout.count() > 0) {
    slow_timer_.expires_after(limits_.slow_consumer_timeout);
    slow_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || !self->output_full_) return;
      self->abort({CloseReason::Kind::slow_consumer,
                   "over " + std::to_string(self->limits_.high_water) + " queued bytes for " +
                       std::to_string(self->limits_.slow_consumer_timeout.count()) + " ms"});
    });
  }
  handler_->on_backpressure(*this, true);
}

void TcpConnection::note_output_shrank() {
  if (!output_full_ || queue_.queued_bytes() > limits_.low_water) return;
  const bool was_stopped = stops_reading();
  output_full_ = false;
  slow_timer_.cancel();
  handler_->on_backpressure(*this, false);
  // Reading stopped for the full output starts again. A read being handled
  // (a write completed on the spot) decides in on_read.
  if (was_stopped && !stops_reading() && reading_ == Reading::idle && state_ != State::closed) post_read();
}

}  // namespace volley::net
