#include <volley/net/session.hpp>

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace volley::net {

const char* to_string(SendResult r) noexcept {
  switch (r) {
    case SendResult::sent: return "sent";
    case SendResult::high_water: return "refused: over the high-water mark";
    case SendResult::closed: return "refused: session closed";
    case SendResult::invalid: return "refused: cannot be framed";
    case SendResult::queued: return "queued in the outbox";
    case SendResult::outbox_full: return "refused: outbox full";
  }
  return "?";
}

namespace {
session::PolicyOptions policy_options(const SessionOptions& o) noexcept {
  return {.heartbeat_interval = o.heartbeat_interval,
          .heartbeat_misses = o.heartbeat_misses,
          .idle_timeout = o.idle_timeout};
}
}  // namespace

Session::Session(std::unique_ptr<SessionCodec> codec, const SessionOptions& options, SessionEvents& events)
    : codec_(std::move(codec)), options_(options), events_(&events), policy_(policy_options(options)) {}

Session::Session(std::unique_ptr<SessionCodec> codec, const SessionOptions& options,
                 std::unique_ptr<SessionEvents> events)
    : Session(std::move(codec), options, *events) {
  owned_events_ = std::move(events);
}

void Session::on_open(TcpConnection& connection) {
  connection_ = &connection;
  policy_.start(Clock::now());
  if (policy_.next_deadline() != Clock::time_point::max()) {
    timer_.emplace(connection.get_executor());
    arm_timer();
  }
  events_->on_open(*this);
}

SendResult Session::refuse(SendResult why) noexcept {
  ++stats_.refused_sends;
  return why;
}

SendResult Session::can_send() const noexcept {
  if (connection_ == nullptr || !connection_->open()) return SendResult::closed;
  return connection_->output_full() ? SendResult::high_water : SendResult::sent;
}

SendResult Session::queued(std::size_t messages) {
  stats_.messages_out += messages;
  policy_.message_sent();
  return SendResult::sent;
}

SendResult Session::send(std::span<const std::byte> payload) {
  if (const SendResult r = can_send(); r != SendResult::sent) return refuse(r);
  // Refused before any room is reserved for it.
  if (payload.size() > codec_->max_payload()) return refuse(SendResult::invalid);
  // Framed straight into the write queue: one pass over the payload.
  std::error_code ec;
  connection_->send_in_place(SessionCodec::kMaxHeader + payload.size(),
                             [&](std::span<std::byte> room) { return codec_->write_frame(payload, room, ec); });
  if (ec) return refuse(SendResult::invalid);
  return queued(1);
}

SendResult Session::send_received(std::span<const std::byte> payload) {
  if (const SendResult r = can_send(); r != SendResult::sent) return refuse(r);
  if (payload.size() > codec_->max_payload()) return refuse(SendResult::invalid);
  std::array<std::byte, SessionCodec::kMaxHeader> header;
  std::error_code ec;
  const std::size_t n = codec_->frame_header(payload, header, ec);
  if (ec) return refuse(SendResult::invalid);
  connection_->send_borrowed_body(std::span(header).first(n), payload);
  // The queue is written in order: once everything queued now has been
  // written, the payload has left. (A write that completed at once has
  // already been counted, and then nothing is queued.)
  if (connection_->queued_bytes() > 0) {
    lent_until_ = bytes_written_ + connection_->queued_bytes();
    if (!holding_input_) {
      holding_input_ = true;
      connection_->pause_reading();
      update_hearing();  // a peer slow to take the payload is not silent
    }
  }
  return queued(1);
}

SendResult Session::send_framed(std::span<const std::byte> frames, std::size_t messages, Buffer buffer) {
  if (const SendResult r = can_send(); r != SendResult::sent) return refuse(r);
  if (buffer == Buffer::lent) connection_->send_borrowed(frames);
  else connection_->send(frames);
  return queued(messages);
}

void Session::close(CloseReason reason) {
  if (connection_ != nullptr) connection_->close(std::move(reason));
}

bool Session::say_goodbye() {
  if (stats_.goodbyes_out > 0) return true;  // once is enough (a connection drained twice as it opened)
  if (connection_ == nullptr || !connection_->open()) return false;
  const StreamTransport* transport = connection_->transport();
  if (transport != nullptr && transport->closes_in_band()) {
    connection_->close({CloseReason::Kind::shutdown, "draining"});  // a WebSocket close, 1001 going away
    ++stats_.goodbyes_out;
    return true;
  }
  const auto goodbye = codec_->goodbye();
  if (goodbye.empty() || !connection_->send(goodbye)) return false;
  ++stats_.goodbyes_out;
  return true;
}

void Session::on_drain(TcpConnection& connection) {
  if (!say_goodbye()) connection.close({CloseReason::Kind::shutdown, {}});
}

void SessionEvents::on_goodbye(Session& session) {
  session.close({CloseReason::Kind::peer_going_away, "the peer said goodbye"});
}

void Session::on_backpressure(TcpConnection& /*connection*/, bool full) {
  if (full) ++stats_.high_water_events;
  update_hearing();
  events_->on_backpressure(*this, full);
}

void Session::update_hearing() {
  const bool stopped_for_output = connection_ != nullptr && connection_->output_full() &&
                                  connection_->limits().stop_reading_when_full;
  const bool reading = !input_paused_ && !holding_input_ && !stopped_for_output;
  if (reading == policy_.reading()) return;
  if (!reading) return policy_.input_paused();
  policy_.input_resumed(Clock::now());
  arm_timer();
}

void Session::on_written(TcpConnection& connection, std::size_t bytes) {
  // Heartbeats go out only onto an empty queue, so theirs are the first bytes
  // written after them; the events hear of their own bytes only.
  const std::size_t heartbeat = std::min(bytes, heartbeat_bytes_queued_);
  heartbeat_bytes_queued_ -= heartbeat;
  bytes_written_ += bytes;
  if (holding_input_ && bytes_written_ >= lent_until_) {
    holding_input_ = false;  // the lent payloads have left: the input buffer may move again
    if (!input_paused_ && connection.open()) {
      update_hearing();
      connection.resume_reading();
    }
  }
  if (bytes > heartbeat) events_->on_written(*this, bytes - heartbeat);
}

void Session::on_data(TcpConnection& /*connection*/, std::size_t n) {
  codec_->commit(n);
  if (policy_.hears_peer()) policy_.bytes_received(Clock::now());
  decode_buffered();
}

inline void Session::deliver(const Message& message) {
  ++stats_.messages_in;
  policy_.message_received();
  events_->on_message(*this, message);
}

void Session::decode_buffered() {
  Message message;
  while (!input_paused_ && !connection_->closed()) {
    // Whole, valid messages (nearly every frame) in a loop of their own;
    // next() says what anything else at the head is.
    while (codec_->next_message(message)) {
      deliver(message);
      if (input_paused_ || connection_->closed()) return;
    }
    const Inbound in = codec_->next();
    switch (in.kind) {
      case Inbound::Kind::need_more: return;
      case Inbound::Kind::message: deliver(in.message); break;
      case Inbound::Kind::heartbeat:
        ++stats_.heartbeats_in;
        events_->on_heartbeat(*this);
        break;
      case Inbound::Kind::goodbye:
        ++stats_.goodbyes_in;
        events_->on_goodbye(*this);
        break;
      case Inbound::Kind::rejected:
      case Inbound::Kind::failed: {
        ++stats_.protocol_errors;
        const bool closing =
            in.kind == Inbound::Kind::failed || options_.on_protocol_error == SessionOptions::OnProtocolError::close;
        events_->on_protocol_error(*this, in.error, in.message.bytes, closing);
        if (closing) {
          // Replies to the frames before the bad one still go out; nothing after it is read.
          input_paused_ = true;
          connection_->close({CloseReason::Kind::protocol_error, in.error.message(), in.error});
          return;
        }
        break;
      }
    }
  }
}

void Session::pause_input() {
  input_paused_ = true;
  update_hearing();  // not reading, we cannot hear the peer: the liveness check waits for us
  if (connection_ != nullptr) connection_->pause_reading();
}

void Session::resume_input() {
  if (!input_paused_ || connection_ == nullptr || !connection_->open()) return;
  input_paused_ = false;
  update_hearing();  // unless held for a lent payload, or stopped for full output
  {
    const TcpConnection::Corked corked(*connection_);  // replies to the buffered frames leave together
    decode_buffered();
  }
  if (!input_paused_ && !holding_input_ && connection_->open()) connection_->resume_reading();
}

void Session::arm_timer() {
  if (!timer_) return;
  const auto next = policy_.next_deadline();
  if (next >= timer_at_) return;
  timer_at_ = next;
  timer_->expires_at(next);
  timer_->async_wait([this, keep = connection_->shared_from_this()](const boost::system::error_code& ec) {
    if (ec != boost::asio::error::operation_aborted) on_timer();
  });
}

void Session::on_timer() {
  timer_at_ = Clock::time_point::max();
  // A closing connection is bounded by its linger time, not by this policy.
  if (!connection_->open()) return;
  const auto now = Clock::now();
  // An answer to the transport's own keepalive (a WebSocket pong) is hearing from the peer.
  if (const std::uint64_t heard = connection_->keepalives_heard(); heard != keepalives_heard_) {
    keepalives_heard_ = heard;
    policy_.bytes_received(now);
  }
  const session::Decision d = policy_.poll(now, connection_->queued_bytes() == 0);
  if (d.send_heartbeat) {
    // Over WebSocket a ping, which a browser answers by itself; else the codec's heartbeat frame.
    if (connection_->send_keepalive()) {
      ++stats_.heartbeats_out;
    } else {
      const auto heartbeat = codec_->heartbeat();
      heartbeat_bytes_queued_ += heartbeat.size();  // before send(), which may write at once
      if (connection_->send(heartbeat)) ++stats_.heartbeats_out;
      else heartbeat_bytes_queued_ -= heartbeat.size();
    }
  }
  switch (d.end) {
    case session::End::none: break;
    case session::End::peer_silent: {
      CloseReason reason{CloseReason::Kind::heartbeat_timeout,
                         fmt::format("nothing received for {} ms", d.silent_for.count())};
      // Over a transport that closes in band (WebSocket) with nothing queued,
      // the close frame goes out the orderly way (bounded by the linger), so a
      // peer that is only slow still reads why. Otherwise the peer is gone (or
      // hung): nothing queued can reach it, so no flush.
      const StreamTransport* transport = connection_->transport();
      if (transport != nullptr && transport->closes_in_band() && connection_->queued_bytes() == 0)
        return connection_->close(std::move(reason));
      return connection_->abort(std::move(reason));
    }
    case session::End::idle:
      return connection_->close(
          {CloseReason::Kind::idle_timeout, fmt::format("no message for {} ms", options_.idle_timeout.count())});
  }
  arm_timer();
}

void Session::on_close(TcpConnection& connection, const CloseReason& reason) {
  // Set already unless the transport's handshake failed before on_open. Only
  // then written here: another thread may be reading it (a metrics scrape
  // takes each open session's connection under its events' lock), and even a
  // write of the same value would race with that read.
  if (connection_ == nullptr) connection_ = &connection;
  if (timer_) timer_->cancel();
  timer_at_ = Clock::time_point::max();
  events_->on_close(*this, reason);
}

}  // namespace volley::net
