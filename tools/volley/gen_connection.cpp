#include "gen_connection.hpp"

#include <algorithm>
#include <cmath>

#include <volley/gnb/views.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/crc32c.hpp>

namespace volley::tools {

namespace asio = boost::asio;

namespace {
constexpr std::size_t kBlockBytes = 64 * 1024;
constexpr std::uint64_t kMaxPacedBatch = 4096;
}  // namespace

GenConnection::GenConnection(const GenConfig& config, std::size_t index, asio::io_context& loop)
    : config_(config), stop_timer_(loop), pacer_(loop), outstanding_(kOutstanding) {
  const auto payload = config.payload;
  if (config.rate_per_connection > 0) {
    cycle_ = build_block(config.specs, config.order, 1, payload, index * 2 + 1);
  } else {
    const std::size_t cycles = cycles_for(config.specs, config.order, kBlockBytes);
    for (int b = 0; b < 2; ++b) blocks_[b] = build_block(config.specs, config.order, cycles, payload, index * 2 + b);
  }
  results_.frames_per_spec.assign(config.specs.size(), 0);
  results_.bytes_per_spec.assign(config.specs.size(), 0);
  frames_per_cycle_.assign(config.specs.size(), 0);
  for (const std::size_t spec : config.order) ++frames_per_cycle_[spec];
}

std::int64_t GenConnection::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void GenConnection::start(std::shared_ptr<net::TcpConnection> connection, net::Session& session,
                          std::function<void()> on_done) {
  connection_ = std::move(connection);
  session_ = &session;
  on_done_ = std::move(on_done);
  connection_->start();  // on_opened() follows, at once for plain TCP, after the handshake for TLS
}

void GenConnection::on_opened() {
  started_ = std::chrono::steady_clock::now();
  stop_timer_.expires_after(config_.duration);
  stop_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) stop();
  });
  if (config_.rate_per_connection > 0) {
    send_paced();
  } else {
    send_block(0);
    send_block(1);
  }
}

void GenConnection::stamp(std::byte* body, const std::byte* stable_body, std::size_t size, std::int64_t now) {
  const std::uint32_t id = next_transaction_++;
  wire::store_u32_be(body, id);
  // An entry still unanswered 65536 ids later is overwritten; its late reply counts as unmatched.
  outstanding_[id % kOutstanding] = {id, false, now, stable_body, size};
}

std::uint32_t GenConnection::checksum_of(const Outstanding& o) {
  std::array<std::byte, 4> id;
  wire::store_u32_be(id.data(), o.transaction_id);
  return wire::crc32c({o.body + id.size(), o.body_size - id.size()}, wire::crc32c(id));
}

bool GenConnection::send_framed(std::span<const std::byte> frames, std::size_t messages, net::Session::Buffer buffer) {
  const net::SendResult r = session_->send_framed(frames, messages, buffer);
  if (r == net::SendResult::sent) return true;
  results_.refused_sends += 1;
  return false;
}

void GenConnection::send_block(int index) {
  FrameBlock& block = blocks_[index];
  const std::int64_t now = now_ns();
  for (const auto& c : block.controls) {
    std::byte* body = block.bytes.data() + c.body_offset;
    stamp(body, body, c.body_size, now);
  }
  // Recorded first: the connection may write at once and report it from inside the send.
  in_flight_.push_back({block.bytes.size(), next_message_, block.frames.size(), index});
  next_message_ += block.frames.size();
  // Lent: the block is stamped again only once on_written() says it left.
  // Refused only when the session is closing: nothing more goes out then.
  if (!send_framed(block.bytes, block.frames.size(), net::Session::Buffer::lent)) {
    in_flight_.pop_back();
    next_message_ -= block.frames.size();
  }
}

void GenConnection::send_paced() {
  if (stopping_) return;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const auto due_total = static_cast<std::uint64_t>(elapsed * config_.rate_per_connection) + 1;
  const std::uint64_t due = std::min(due_total > next_message_ ? due_total - next_message_ : 0, kMaxPacedBatch);
  if (due > 0) {
    staging_.clear();
    const std::int64_t now = now_ns();
    const std::size_t cycle = cycle_.frames.size();
    for (std::uint64_t k = 0; k < due; ++k) {
      const auto& f = cycle_.frames[(next_message_ + k) % cycle];
      const std::size_t at = staging_.size();
      staging_.insert(staging_.end(), cycle_.bytes.begin() + static_cast<std::ptrdiff_t>(f.offset),
                      cycle_.bytes.begin() + static_cast<std::ptrdiff_t>(f.offset + f.size));
      if (f.control >= 0)
        stamp(staging_.data() + at + gnb::kHeaderSize, cycle_.bytes.data() + f.offset + gnb::kHeaderSize,
              f.size - gnb::kHeaderSize, now);
    }
    in_flight_.push_back({staging_.size(), next_message_, due, -1});
    next_message_ += due;
    if (!send_framed(staging_, due, net::Session::Buffer::copy)) {
      // Over the session's high-water mark: the same messages are due at the next tick.
      in_flight_.pop_back();
      next_message_ -= due;
    }
  }
  arm_pacer();
}

void GenConnection::arm_pacer() {
  // Wake when the next message is due, but at most once a millisecond: at high
  // rates messages go out in small batches rather than one timer each.
  const double next_due_s = static_cast<double>(next_message_) / config_.rate_per_connection;
  const auto due_at = started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(next_due_s));
  pacer_.expires_at(std::max(due_at, std::chrono::steady_clock::now() + std::chrono::milliseconds(1)));
  pacer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) send_paced();
  });
}

void GenConnection::on_written(std::size_t bytes) {
  while (bytes > 0 && !in_flight_.empty()) {
    const InFlight done = in_flight_.front();
    in_flight_.pop_front();
    bytes -= std::min(bytes, done.bytes);
    count_sent(done.first_message, done.messages);
    frames_sent_.add(done.messages);
    bytes_sent_.add(done.bytes);
    results_.send_time = std::chrono::steady_clock::now() - started_;
    if (done.block >= 0 && !stopping_) send_block(done.block);
  }
  finish_if_drained();
}

void GenConnection::count_sent(std::uint64_t first, std::uint64_t count) {
  // Any run of whole cycles holds each spec as often as one cycle does, times
  // the cycles (a full-speed block is whole cycles): only the rest is walked.
  const std::size_t cycle = config_.order.size();
  const std::uint64_t cycles = count / cycle;
  if (cycles > 0) {
    for (std::size_t spec = 0; spec < frames_per_cycle_.size(); ++spec) {
      results_.frames_per_spec[spec] += cycles * frames_per_cycle_[spec];
      results_.bytes_per_spec[spec] += cycles * frames_per_cycle_[spec] * (gnb::kHeaderSize + config_.specs[spec].size);
    }
  }
  for (std::uint64_t m = first + cycles * cycle; m < first + count; ++m) {
    const std::size_t spec = config_.order[m % cycle];
    results_.frames_per_spec[spec] += 1;
    results_.bytes_per_spec[spec] += gnb::kHeaderSize + config_.specs[spec].size;
  }
}

void GenConnection::stop() {
  if (stopping_) return;
  stopping_ = true;
  stop_timer_.cancel();
  pacer_.cancel();
  finish_if_drained();
}

void GenConnection::finish_if_drained() {
  if (!stopping_ || !in_flight_.empty() || finished_sending_ || !connection_) return;
  finished_sending_ = true;
  // Half-close: the target answers what it has, closes, and we read to its end.
  session_->close({net::CloseReason::Kind::local_close, {}});
}

void GenConnection::on_reply(const gnb::Frame& frame) {
  const std::int64_t now = now_ns();
  auto match = [&](std::uint32_t id) -> Outstanding* {
    Outstanding& o = outstanding_[id % kOutstanding];
    if (o.answered || o.transaction_id != id) {
      results_.unmatched_replies += 1;
      return nullptr;
    }
    o.answered = true;
    results_.rtt_ns.record(static_cast<std::uint64_t>(std::max<std::int64_t>(0, now - o.sent_ns)));
    replies_.add();
    return &o;
  };
  gnb::dispatch(frame, dispatch::Overloaded{
                                [&](const gnb::AckView& v) {
                                  results_.acks += 1;
                                  match(v.transaction_id);
                                },
                                [&](const gnb::AckChecksumView& v) {
                                  results_.ack_checksums += 1;
                                  if (const Outstanding* o = match(v.transaction_id); o && checksum_of(*o) != v.checksum)
                                    results_.checksum_mismatches += 1;
                                },
                                [&](const gnb::NackView& v) {
                                  results_.nacks += 1;
                                  match(v.transaction_id);
                                },
                                [&](const auto&) { results_.unexpected_frames += 1; },
                            });
}

void GenConnection::on_closed(const net::CloseReason& reason) {
  stopping_ = true;
  stop_timer_.cancel();
  pacer_.cancel();
  results_.clean = finished_sending_ && (reason.kind == net::CloseReason::Kind::local_close);
  if (session_ != nullptr) {
    results_.keepalives_in = session_->stats().heartbeats_in;
    results_.keepalives_out = session_->stats().heartbeats_out;
  }
  results_.close_reason = reason.detail.empty() ? net::to_string(reason.kind)
                                                : std::string(net::to_string(reason.kind)) + ": " + reason.detail;
  if (on_done_) on_done_();
}

}  // namespace volley::tools
