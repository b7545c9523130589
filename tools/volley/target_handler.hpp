#pragma once
// The per-connection logic of `volley target`: count every frame, and answer
// control messages when asked to. The three handler kinds are the gNB handler benchmark's
// experiment: they differ only in how a frame reaches the typed code.
#include <string_view>

#include <spdlog/spdlog.h>

#include "legacy_messages.hpp"
#include <volley/gnb/session_codec.hpp>
#include <volley/gnb/views.hpp>
#include <volley/net/session.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/crc32c.hpp>
#include <volley/wire/error.hpp>

#include "target_stats.hpp"

namespace volley::tools {

enum class HandlerKind { variant, virtual_dispatch, dummy };
enum class ReplyMode { none, ack, ack_checksum };

// A control frame's reply, when the target is asked for one. Out of line: the
// reply's frame buffer stays off the per-frame path's stack.
[[gnu::noinline]] inline void reply_to(const gnb::ControlView& control, ReplyMode reply, TargetStats& stats,
                                       net::Session& session) {
  using namespace gnb;
  if (reply == ReplyMode::ack) {
    const auto frame = make_ack_frame({control.transaction_id});
    if (session.send(frame) == net::SendResult::sent) stats.add(stats.replies_ack);
  } else if (reply == ReplyMode::ack_checksum) {
    const auto frame = make_ack_checksum_frame({control.transaction_id, wire::crc32c(control.body)});
    if (session.send(frame) == net::SendResult::sent) stats.add(stats.replies_ack_checksum);
  }
}

// The typed work, the same whichever way dispatch reached it.
class TargetLogic {
 public:
  TargetLogic(ReplyMode reply, TargetStats& stats, net::Session& session)
      : reply_(reply), stats_(stats), session_(session) {}

  void operator()(const gnb::ControlView& control) {
    if (reply_ != ReplyMode::none) reply_to(control, reply_, stats_, session_);
  }
  // Acks, nacks and data carry nothing the target must act on: counting them is the work.
  void operator()(const gnb::AckView&) {}
  void operator()(const gnb::NackView&) {}
  void operator()(const gnb::AckChecksumView&) {}
  void operator()(const gnb::DataView&) {}

 private:
  ReplyMode reply_;
  TargetStats& stats_;
  net::Session& session_;
};

// One connection's session events. The session's gNB codec hands over whole
// checked frames; keepalives stop in the session.
template <HandlerKind Kind>
class TargetEvents final : public net::SessionEvents {
 public:
  TargetEvents(ReplyMode reply, TargetStats& stats) : reply_(reply), stats_(stats) {
    stats_.add(stats_.connections_opened);
  }

  void on_message(net::Session& s, const net::Message& message) override {
    // Counting needs only the id and the size; the frame is made where a
    // typed handler reads it (gnb::frame_of says why it rebuilds the body).
    auto& per_type = stats_.types[gnb::type_index(static_cast<gnb::MessageType>(message.id))];
    const bool shared = stats_.shared;  // read once: the compiler would read it again after an atomic add
    per_type.frames.add(1, shared);
    per_type.bytes.add(message.bytes.size(), shared);
    if constexpr (Kind == HandlerKind::variant) {
      gnb::dispatch(gnb::frame_of(message), TargetLogic(reply_, stats_, s));  // as the codec read it
    } else if constexpr (Kind == HandlerKind::virtual_dispatch) {
      const auto legacy = benchmarks::legacy::make_message(gnb::frame_of(message));
      benchmarks::legacy::dispatch(*legacy, TargetLogic(reply_, stats_, s));
    } else {
      if (message.bytes.empty()) spdlog::error("empty frame");  // the dummy's whole check
    }
    // A reply took the queue over its high-water mark: read no more frames
    // until it drains, rather than refuse the replies they would need.
    if (s.congested()) s.pause_input();
  }

  void on_backpressure(net::Session& s, bool congested) override {
    if (!congested) s.resume_input();
  }

  void on_protocol_error(net::Session& s, const std::error_code& error, std::span<const std::byte> bytes,
                         bool closing) override {
    using namespace gnb;
    const bool too_long = error == wire::Errc::body_too_long;
    if (too_long || error == wire::Errc::body_too_short) {  // a whole frame, skipped: the stream is in sync
      const Frame frame = frame_of(bytes);
      auto& per_type = stats_.types[type_index(frame.type)];
      stats_.add(too_long ? per_type.rejected_too_long : per_type.rejected_too_short);
      if (frame.type == MessageType::control && reply_ != ReplyMode::none && !closing) {
        const std::uint32_t id = frame.body.size() >= 4 ? wire::load_u32_be(frame.body.data()) : 0;
        const auto nack = make_nack_frame({id, too_long ? NackCause::body_too_long : NackCause::body_too_short});
        if (s.send(nack) == net::SendResult::sent) stats_.add(stats_.replies_nack);
      }
      return;
    }
    // The header cannot be trusted: the session closes.
    stats_.add(error == wire::Errc::unknown_type ? stats_.unknown_type : stats_.length_over_maximum);
    const std::string& peer = s.connection()->peer();
    if (bytes.size() >= kHeaderSize)
      spdlog::warn("{}: closing: {} (type 0x{:04x}, length {})", peer, error.message(), wire::load_u16_be(bytes.data()), wire::load_u32_be(bytes.data() + 2));
    else
      spdlog::warn("{}: closing: {}", peer, error.message());
  }

  void on_close(net::Session& s, const net::CloseReason& reason) override {
    using Kind_ = net::CloseReason::Kind;
    switch (reason.kind) {
      case Kind_::peer_closed:
      case Kind_::peer_going_away: stats_.add(stats_.closed_peer); break;
      case Kind_::protocol_error: stats_.add(stats_.closed_protocol_error); break;
      case Kind_::io_error: stats_.add(stats_.closed_io_error); break;
      case Kind_::slow_consumer: stats_.add(stats_.closed_slow_consumer); break;
      case Kind_::idle_timeout: stats_.add(stats_.closed_idle); break;
      case Kind_::handshake_failed: stats_.add(stats_.closed_handshake_failed); break;
      case Kind_::heartbeat_timeout: stats_.add(stats_.closed_heartbeat_timeout); break;
      case Kind_::shutdown:
      case Kind_::local_close: stats_.add(stats_.closed_shutdown); break;
    }
    stats_.add(stats_.keepalives_in, s.stats().heartbeats_in);
    stats_.add(stats_.keepalives_out, s.stats().heartbeats_out);
    const std::size_t partial_bytes = s.unfinished_bytes();
    auto* c = s.connection();
    if (partial_bytes > 0) {
      stats_.add(stats_.closed_mid_frame);
      spdlog::warn("{}: {} in the middle of a frame ({} bytes of it discarded)", c->peer(),
                   net::to_string(reason.kind), partial_bytes);
    } else if (reason.kind == Kind_::io_error || reason.kind == Kind_::handshake_failed ||
               reason.kind == Kind_::heartbeat_timeout) {
      spdlog::warn("{}: {}: {}", c->peer(), net::to_string(reason.kind), reason.detail);
    }
  }

 private:
  ReplyMode reply_;
  TargetStats& stats_;
};

}  // namespace volley::tools
