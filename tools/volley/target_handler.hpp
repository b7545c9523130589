#pragma once
// The per-connection logic of `volley target`: count every frame, and answer
// control messages when asked to. The three handler kinds are the gNB handler benchmark's
// experiment: they differ only in how a frame reaches the typed code.
#include <string_view>

#include <spdlog/spdlog.h>

#include "legacy_messages.hpp"
#include <volley/dispatch/views.hpp>
#include <volley/net/gnb_session.hpp>
#include <volley/wire/crc32c.hpp>
#include <volley/wire/error.hpp>

#include "target_stats.hpp"

namespace volley::tools {

enum class HandlerKind { variant, virtual_dispatch, dummy };
enum class ReplyMode { none, ack, ack_checksum };

// The typed work, the same whichever way dispatch reached it.
class TargetLogic {
 public:
  TargetLogic(ReplyMode reply, TargetStats& stats, net::TcpConnection& connection)
      : reply_(reply), stats_(stats), connection_(connection) {}

  void operator()(const dispatch::ControlView& control) {
    using namespace wire::gnb;
    if (reply_ == ReplyMode::ack) {
      const auto frame = make_ack_frame({control.transaction_id});
      if (connection_.send(frame)) stats_.replies_ack.add();
    } else if (reply_ == ReplyMode::ack_checksum) {
      const auto frame = make_ack_checksum_frame({control.transaction_id, wire::crc32c(control.body)});
      if (connection_.send(frame)) stats_.replies_ack_checksum.add();
    }
  }
  // Acks, nacks and data carry nothing the target must act on: counting them is the work.
  void operator()(const dispatch::AckView&) {}
  void operator()(const dispatch::NackView&) {}
  void operator()(const dispatch::AckChecksumView&) {}
  void operator()(const dispatch::DataView&) {}

 private:
  ReplyMode reply_;
  TargetStats& stats_;
  net::TcpConnection& connection_;
};

template <HandlerKind Kind>
class TargetConsumer {
 public:
  TargetConsumer(ReplyMode reply, TargetStats& stats) : reply_(reply), stats_(stats) { stats_.connections_opened.add(); }

  void on_frame(net::TcpConnection& c, const wire::gnb::Frame& frame) {
    auto& per_type = stats_.types[wire::gnb::type_index(frame.type)];
    per_type.frames.add();
    per_type.bytes.add(frame.wire_size());
    if constexpr (Kind == HandlerKind::variant) {
      dispatch::dispatch(frame, TargetLogic(reply_, stats_, c));
    } else if constexpr (Kind == HandlerKind::virtual_dispatch) {
      const auto message = benchmarks::legacy::make_message(frame);
      benchmarks::legacy::dispatch(*message, TargetLogic(reply_, stats_, c));
    } else {
      if (frame.wire_size() == 0) spdlog::error("empty frame");  // the dummy's whole check
    }
  }

  void on_rejected(net::TcpConnection& c, const wire::gnb::DecodeResult& r) {
    using namespace wire::gnb;
    auto& per_type = stats_.types[type_index(r.frame.type)];
    const bool too_long = r.error == wire::Errc::body_too_long;
    (too_long ? per_type.rejected_too_long : per_type.rejected_too_short).add();
    if (r.frame.type == MessageType::control && reply_ != ReplyMode::none) {
      const std::uint32_t id = r.frame.body.size() >= 4 ? wire::load_u32_be(r.frame.body.data()) : 0;
      const auto nack = make_nack_frame({id, too_long ? NackCause::body_too_long : NackCause::body_too_short});
      if (c.send(nack)) stats_.replies_nack.add();
    }
  }

  void on_failed(net::TcpConnection& c, const wire::gnb::DecodeResult& r) {
    (r.error == wire::Errc::unknown_type ? stats_.unknown_type : stats_.length_over_maximum).add();
    spdlog::warn("{}:{}: closing: {} (type 0x{:04x}, length {})", c.remote_endpoint().address().to_string(),
                 c.remote_endpoint().port(), r.error.message(), r.raw_type, r.raw_length);
  }

  void on_written(net::TcpConnection&, std::size_t) {}

  void on_close(net::TcpConnection& c, const net::CloseReason& reason, std::size_t partial_bytes) {
    using Kind_ = net::CloseReason::Kind;
    switch (reason.kind) {
      case Kind_::peer_closed: stats_.closed_peer.add(); break;
      case Kind_::protocol_error: stats_.closed_protocol_error.add(); break;
      case Kind_::io_error: stats_.closed_io_error.add(); break;
      case Kind_::slow_consumer: stats_.closed_slow_consumer.add(); break;
      case Kind_::idle_timeout: stats_.closed_idle.add(); break;
      case Kind_::handshake_failed: stats_.closed_handshake_failed.add(); break;
      // The target runs no session timers; this comes only from a Session.
      case Kind_::heartbeat_timeout:
      case Kind_::shutdown:
      case Kind_::local_close: stats_.closed_shutdown.add(); break;
    }
    if (partial_bytes > 0) {
      stats_.closed_mid_frame.add();
      spdlog::warn("{}:{}: {} in the middle of a frame ({} bytes of it discarded)",
                   c.remote_endpoint().address().to_string(), c.remote_endpoint().port(), net::to_string(reason.kind),
                   partial_bytes);
    } else if (reason.kind == Kind_::io_error || reason.kind == Kind_::handshake_failed) {
      spdlog::warn("{}:{}: {}", c.remote_endpoint().address().to_string(), c.remote_endpoint().port(), reason.detail);
    }
  }

 private:
  ReplyMode reply_;
  TargetStats& stats_;
};

}  // namespace volley::tools
