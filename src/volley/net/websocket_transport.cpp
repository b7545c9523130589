// The WebSocket transport: the upgrade as its handshake, then frames both
// ways through the layer below (the socket, or TLS for wss). Frames come in
// through wire::websocket::Receiver; the caller's bytes become messages in
// OutgoingMessages and go out of a WebSocketOutput.
#include <volley/net/websocket.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include <boost/asio/error.hpp>

#include <volley/wire/websocket.hpp>

#include "socket_layer.hpp"
#include "websocket_handshake.hpp"
#include "websocket_messages.hpp"
#include "websocket_output.hpp"

namespace volley::net {
namespace {

namespace asio = boost::asio;
namespace ws = wire::websocket;
using Wait = StreamTransport::Wait;

class WebSocketTransport final : public StreamTransport {
 public:
  static constexpr std::size_t kInputBuffer = 64 * 1024;
  // Answers to pings (pongs) waiting for room on the socket: past this, reading
  // stops until they have gone. A peer that pings and never reads would
  // otherwise grow them without bound, beside the connection's own output
  // limit, which never sees them.
  static constexpr std::size_t kMaxWaitingAnswers = 64 * 1024;

  WebSocketTransport(WebSocketRole role, WebSocketOptions options, std::unique_ptr<StreamTransport> tls)
      : role_(role),
        options_(std::move(options)),
        lower_(tls ? std::move(tls) : std::make_unique<detail::SocketLayer>()),
        over_tls_(dynamic_cast<detail::SocketLayer*>(lower_.get()) == nullptr),
        receiver_(role == WebSocketRole::server, options_.max_message_size),
        in_(kInputBuffer),
        output_(role == WebSocketRole::client),
        messages_(options_) {
    receiver_.report_message_ends(options_.mirror_incoming_messages);
    if (role_ == WebSocketRole::client) key_ = detail::make_client_key();
  }

  void attach(int fd) override { lower_->attach(fd); }

  Wait handshake(boost::system::error_code& ec) override {
    blocked_ = Wait::none;
    if (phase_ == Phase::lower) {
      const Wait wait = lower_->handshake(ec);
      if (ec || wait != Wait::none) return wait;
      phase_ = Phase::head;
      if (role_ == WebSocketRole::client) {
        const std::string request = detail::make_upgrade_request(options_.host, options_.target, key_);
        output_.append_raw(std::as_bytes(std::span(request)));
      }
    }
    // A client's request (or a server's answer) goes out before anything else.
    if (!flush_out(ec)) return ec ? Wait::none : blocked_;
    if (refusal_) {
      ec = *refusal_;  // the error status went out as far as the socket took it
      return Wait::none;
    }
    if (phase_ == Phase::open) return Wait::none;
    // Read the peer's head.
    std::size_t head = 0;
    while ((head = detail::http_head_size(input())) == 0) {
      if (in_end_ >= detail::kMaxHttpHead) return refuse(detail::answer_oversize_head(), ec);
      const std::size_t n = lower_->read_some(std::span(in_).subspan(in_end_, detail::kMaxHttpHead - in_end_), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        ec = {};
        return lower_->blocked_on() == Wait::write ? Wait::write : Wait::read;
      }
      if (ec == asio::error::eof) ec = make_error_code(WebSocketHandshakeErrc::closed);
      if (ec) return Wait::none;
      in_end_ += n;
    }
    const std::string_view text(reinterpret_cast<const char*>(in_.data()), head);
    in_begin_ = head;  // what follows the head is the first frames
    if (role_ == WebSocketRole::client) {
      const std::error_code error = detail::check_upgrade_response(text, key_);
      if (error) ec = error;
      phase_ = Phase::open;
      return Wait::none;
    }
    detail::UpgradeAnswer answer = detail::answer_upgrade(text, options_.accept_target);
    if (answer.error) return refuse(std::move(answer), ec);
    phase_ = Phase::open;
    output_.append_raw(std::as_bytes(std::span(answer.response)));
    if (!flush_out(ec)) return ec ? Wait::none : blocked_;
    return Wait::none;
  }

  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    if (input_ == Input::ended) {
      ec = input_error_;
      return 0;
    }
    blocked_ = Wait::none;
    if (input_ == Input::ending) {  // the in-band end, said once; after it, the socket is only drained
      ec = input_error_;
      input_ = Input::draining;
      return 0;
    }
    if (input_ == Input::draining) return drain(ec);
    input_left_ = false;
    std::size_t taken = 0;  // wire bytes read from the layer below in this turn
    // Answers to pings wait in the output when the socket was full: they go first.
    if (pending_out() > 0) {
      boost::system::error_code ignored;
      flush_out(ignored);
    }
    std::size_t produced = 0;
    bool drained = false;
    while (input_ == Input::reading) {
      if (pending_out() > kMaxWaitingAnswers) {
        boost::system::error_code ignored;
        if (!flush_out(ignored)) {
          // The peer is not reading its pongs: no more input until they leave
          // (blocked_ says what to wait for; what is in in_ is kept for then).
          input_left_ = produced > 0 && in_begin_ < in_end_;
          break;
        }
      }
      if (in_begin_ < in_end_) {
        const ws::Receiver::Result r = receiver_.decode(input(), buffer.subspan(produced));
        in_begin_ += r.consumed;
        produced += r.produced;
        if (r.event != ws::Receiver::Event::none) {
          on_event(r.event);
          continue;
        }
        if (produced == buffer.size()) {
          input_left_ = in_begin_ < in_end_;
          break;
        }
      }
      if (drained && !lower_->has_buffered_input()) break;
      if (taken >= kMaxReadTurn) {
        // A peer whose frames yield little (empty fragments, pings) must not
        // hold the loop for as long as it keeps sending: the turn ends here.
        input_left_ = true;
        break;
      }
      // Keep a partial frame, make room behind it.
      if (in_begin_ == in_end_) {
        in_begin_ = in_end_ = 0;
      } else if (in_begin_ > 0) {
        std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
        in_end_ -= in_begin_;
        in_begin_ = 0;
      }
      const std::size_t room = in_.size() - in_end_;
      boost::system::error_code read_error;
      const std::size_t n = lower_->read_some(std::span(in_).subspan(in_end_, room), read_error);
      if (read_error == asio::error::would_block || read_error == asio::error::try_again) {
        blocked_ = lower_->blocked_on();
        break;
      }
      if (read_error) {
        end_input(Input::ended, read_error);  // an end without a close frame is still an end (1006)
        break;
      }
      in_end_ += n;
      taken += n;
      drained = n < room;
    }
    if (produced > 0) return produced;
    if (input_ != Input::reading) return read_some(buffer, ec);
    if (input_left_) {  // (only a yield leaves input with nothing produced)
      blocked_ = Wait::none;  // with has_buffered_input(): called again after the loop's other work
      ec = asio::error::would_block;
      return 0;
    }
    // An answer still waiting for room goes before more reading.
    if (pending_out() > 0 && blocked_ != Wait::read) blocked_ = Wait::write;
    if (blocked_ == Wait::none) blocked_ = Wait::read;
    ec = asio::error::would_block;
    return 0;
  }

  std::size_t write_some(std::span<const asio::const_buffer> buffers, boost::system::error_code& ec) override {
    blocked_ = Wait::none;
    if (!flush_out(ec)) {
      if (!ec) ec = asio::error::would_block;
      return 0;
    }
    std::size_t total = 0;
    for (const auto& b : buffers) total += b.size();
    if (total == 0) return 0;
    if (close_sent_) return total;  // no message may follow a close frame: what comes after it is dropped
    messages_.write(buffers, total, receiver_.in_message(), output_);
    boost::system::error_code send_error;
    if (!flush_out(send_error) && send_error) ec = send_error;  // taken, but the connection is broken
    return ec ? 0 : total;
  }

  Wait blocked_on() const override { return blocked_; }
  bool has_buffered_input() const override {
    return input_ == Input::ending || input_ == Input::ended || input_left_ || lower_->has_buffered_input();
  }
  End ended_in_band() const override { return in_band_end_; }
  bool has_buffered_output() const override { return pending_out() > 0 || lower_->has_buffered_output(); }

  void shutdown_send() override {
    if (phase_ == Phase::open && !close_sent_) {
      // The peer's code echoed when it closed first; else ours, and why.
      if (peer_close_code_) {
        send_close(*peer_close_code_);
      } else {
        send_close(goodbye_ ? goodbye_->code : ws::close_code::normal, goodbye_ ? goodbye_->reason : "");
      }
      boost::system::error_code ignored;
      flush_out(ignored);
    }
    lower_->shutdown_send();
  }

  void say_goodbye(Goodbye why, std::string_view detail, bool now) override {
    if (phase_ != Phase::open || close_sent_ || peer_close_code_) return;
    goodbye_ = Farewell{goodbye_code(why), close_reason(why, detail)};
    if (!now) return;  // shutdown_send() says it, after what is queued
    send_close(goodbye_->code, goodbye_->reason);
    boost::system::error_code ignored;
    flush_out(ignored);
  }

  bool closes_in_band() const override { return true; }

  bool send_keepalive() override {
    if (phase_ != Phase::open || close_sent_ || in_band_end_ != End::none) return true;  // nothing may follow: none needed
    output_.append_control(ws::Opcode::ping, {});
    boost::system::error_code ignored;
    flush_out(ignored);  // what the socket does not take goes with the next read or write
    return true;
  }

  std::uint64_t keepalives_heard() const override { return pongs_; }

  bool resumed_session() const override { return lower_->resumed_session(); }
  std::string describe() const override {
    return over_tls_ ? "WebSocket over " + lower_->describe() : std::string("WebSocket");
  }

 private:
  enum class Phase { lower, head, open };
  // Where the input is: frames read and decoded; ended in band (a close
  // frame, a broken rule) and not yet said to the caller; said, the socket
  // read and dropped to its end; the socket's end (or error), said on every read.
  enum class Input { reading, ending, draining, ended };

  std::span<const std::byte> input() const noexcept { return {in_.data() + in_begin_, in_end_ - in_begin_}; }
  std::size_t pending_out() const noexcept { return output_.pending().size(); }

  Wait refuse(detail::UpgradeAnswer answer, boost::system::error_code& ec) {
    refusal_ = answer.error;
    output_.append_raw(std::as_bytes(std::span(answer.response)));
    boost::system::error_code ignored;
    flush_out(ignored);  // best effort: the connection closes next
    ec = answer.error;
    return Wait::none;
  }

  void send_close(std::uint16_t code, std::string_view reason = {}) {
    close_sent_ = true;
    output_.append_close(code, reason);
  }

  // "idle timeout: no byte either way for 30000 ms", cut to what a close
  // frame holds (123 bytes), and only ASCII: the reason must be UTF-8.
  static std::string close_reason(Goodbye why, std::string_view detail) {
    static constexpr const char* kWhy[] = {"closed", "server shutting down", "heartbeat timeout", "idle timeout",
                                           "slow consumer", "bad message"};
    std::string reason = kWhy[static_cast<std::size_t>(why)];
    if (!detail.empty()) (reason += ": ") += detail;
    std::erase_if(reason, [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    if (reason.size() > ws::kMaxControlPayload - 2) reason.resize(ws::kMaxControlPayload - 2);
    return reason;
  }

  void on_event(ws::Receiver::Event event) {
    switch (event) {
      case ws::Receiver::Event::ping:
        if (!control_frame_allowed()) {
          fail(ws::Errc::control_flood);
        } else if (!close_sent_) {
          output_.append_control(ws::Opcode::pong, receiver_.control_payload());
        }
        break;
      case ws::Receiver::Event::pong:  // an answer to our ping, or unsolicited (a heartbeat): either way, at a rate
        if (!control_frame_allowed()) {
          fail(ws::Errc::control_flood);
        } else {
          ++pongs_;
        }
        break;
      case ws::Receiver::Event::message_end:
        if (!messages_.received(receiver_.last_message_size())) fail(ws::Errc::unanswered_messages);
        break;
      case ws::Receiver::Event::close:
        // The messages end here (a clean end). The answer, with the same code,
        // waits for shutdown_send(): what the application queued before it
        // learnt of the close still goes first (a close sent now would drop it).
        peer_close_code_ = receiver_.close_code();
        in_band_end_ = End::closed_by_peer;
        end_input(Input::ending, asio::error::eof);
        break;
      case ws::Receiver::Event::error: fail(static_cast<ws::Errc>(receiver_.error().value())); break;
      default: break;
    }
    if (pending_out() > 0) {
      boost::system::error_code ignored;
      flush_out(ignored);
    }
  }

  void end_input(Input to, boost::system::error_code error) {
    input_ = to;
    input_error_ = error;
  }

  // The peer broke the protocol or flooded: the close code is queued (on_event
  // flushes it), the exchange ends in band.
  void fail(ws::Errc e) {
    if (!close_sent_) send_close(ws::close_code_for(e));
    if ((e == ws::Errc::empty_frame_flood || e == ws::Errc::control_flood) && options_.stats)
      options_.stats->floods.fetch_add(1, std::memory_order_relaxed);
    in_band_end_ = End::protocol_error;
    end_input(Input::ending, make_error_code(e));
  }

  // At most kMaxPingsPerSecond pings and pongs in the second that began with the first of them.
  bool control_frame_allowed() {
    const auto now = std::chrono::steady_clock::now();
    if (now - control_window_start_ >= std::chrono::seconds(1)) {
      control_window_start_ = now;
      control_frames_in_window_ = 0;
    }
    return ++control_frames_in_window_ <= kMaxPingsPerSecond;
  }

  // After the in-band end: what still comes is read and dropped, until the peer's end of the socket.
  std::size_t drain(boost::system::error_code& ec) {
    if (pending_out() > 0) {
      boost::system::error_code ignored;
      flush_out(ignored);
    }
    input_left_ = false;
    for (std::size_t taken = 0;;) {
      const std::size_t n = lower_->read_some(in_, ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        blocked_ = lower_->blocked_on();
        return 0;
      }
      if (ec) {
        end_input(Input::ended, ec);
        return 0;
      }
      ec = asio::error::would_block;
      if (n < in_.size() && !lower_->has_buffered_input()) {
        blocked_ = Wait::read;
        return 0;
      }
      if ((taken += n) >= kMaxReadTurn) {  // a peer that floods after the end does not hold the loop either
        input_left_ = true;
        blocked_ = Wait::none;
        return 0;
      }
      ec = {};
    }
  }

  // Sends the output (and what the layer below still holds): true when all is gone;
  // false with `ec` clear when the socket is full (blocked_ says what to wait for).
  bool flush_out(boost::system::error_code& ec) {
    while (pending_out() > 0) {
      const asio::const_buffer rest(output_.pending().data(), output_.pending().size());
      const std::size_t n = lower_->write_some(std::span(&rest, 1), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        ec = {};
        blocked_ = lower_->blocked_on() == Wait::read ? Wait::read : Wait::write;
        return false;
      }
      if (ec) return false;
      output_.sent(n);
    }
    if (lower_->has_buffered_output()) {
      lower_->write_some({}, ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) ec = {};
      if (ec) return false;
      if (lower_->has_buffered_output()) {
        blocked_ = lower_->blocked_on() == Wait::read ? Wait::read : Wait::write;
        return false;
      }
    }
    return true;
  }

  WebSocketRole role_;
  WebSocketOptions options_;
  std::unique_ptr<StreamTransport> lower_;
  bool over_tls_;
  ws::Receiver receiver_;
  Phase phase_ = Phase::lower;
  std::string key_;  // a client's Sec-WebSocket-Key
  std::vector<std::byte> in_;
  std::size_t in_begin_ = 0, in_end_ = 0;
  detail::WebSocketOutput output_;
  detail::OutgoingMessages messages_;
  Wait blocked_ = Wait::none;
  // The last read turn ended with input still to decode or read (the caller's
  // buffer filled, answers waiting for room, or kMaxReadTurn): the loop comes back.
  bool input_left_ = false;
  bool close_sent_ = false;
  std::chrono::steady_clock::time_point control_window_start_{};
  std::uint32_t control_frames_in_window_ = 0;
  std::optional<std::uint16_t> peer_close_code_;  // the peer's close, answered by shutdown_send()
  struct Farewell {
    std::uint16_t code;
    std::string reason;
  };
  std::optional<Farewell> goodbye_;  // why this end closes (say_goodbye), for its close frame
  std::uint64_t pongs_ = 0;
  std::optional<std::error_code> refusal_;
  End in_band_end_ = End::none;
  Input input_ = Input::reading;
  boost::system::error_code input_error_;  // what ending and ended say
};

}  // namespace

std::uint16_t goodbye_code(StreamTransport::Goodbye why) noexcept {
  switch (why) {
    case StreamTransport::Goodbye::going_away: return ws::close_code::going_away;
    case StreamTransport::Goodbye::peer_silent:
    case StreamTransport::Goodbye::slow_consumer:
    case StreamTransport::Goodbye::bad_input: return ws::close_code::policy_violation;
    case StreamTransport::Goodbye::done:
    case StreamTransport::Goodbye::idle: break;
  }
  return ws::close_code::normal;
}

std::unique_ptr<StreamTransport> make_websocket_transport(WebSocketRole role, WebSocketOptions options,
                                                          std::unique_ptr<StreamTransport> tls) {
  return std::make_unique<WebSocketTransport>(role, std::move(options), std::move(tls));
}

}  // namespace volley::net
