#pragma once
// The sending half of the ARQ schemes, sans-IO in KCP's manner: the caller
// passes the time in, feeds it the peer's packets, and gets the packets to put
// on the wire from poll(). Knows nothing of sockets or clocks.
//
//  - stop-and-wait: one packet outstanding; a timeout resends it.
//  - go-back-N: up to `window` outstanding; a timeout of the oldest resends
//    every outstanding packet (it really goes back); acks are cumulative only.
//  - selective repeat: up to `window` outstanding, each with its own timer; a
//    timeout resends only that packet; selective acks mark what arrived, and a
//    hole that `fast_retransmit_after` later packets have passed is resent at once.
// All three: RTO from RFC 6298 with Karn's rule (an ack that advances the
// cumulative point also ends a backoff), the receiver's window honoured,
// and the peer declared dead after `dead_after` backed-off timeouts in a row
// with no ack at all.
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

#include <volley/arq/error.hpp>
#include <volley/arq/packet.hpp>
#include <volley/arq/rto.hpp>

namespace volley::arq {

enum class Scheme { stop_and_wait, go_back_n, selective_repeat };
const char* to_string(Scheme scheme) noexcept;

struct SenderConfig {
  Scheme scheme = Scheme::selective_repeat;
  std::uint32_t conversation = 1;
  std::uint32_t window = 64;             // packets outstanding at most (1 for stop-and-wait)
  std::size_t max_payload = 1400;        // bytes of one message
  std::size_t send_buffer = 4096;        // messages accepted but not yet sent
  std::uint32_t initial_sequence = 0;
  std::uint32_t fast_retransmit_after = 3;  // selective repeat; 0 turns it off
  std::uint32_t dead_after = 15;         // backed-off timeouts in a row without any ack (TCP's retries2)
  RtoConfig rto;
};

struct SenderStats {
  std::uint64_t messages_accepted = 0;
  std::uint64_t packets_sent = 0;       // first transmissions
  std::uint64_t retransmissions = 0;    // all resends
  std::uint64_t timeouts = 0;
  std::uint64_t fast_retransmits = 0;
  std::uint64_t bytes_on_wire = 0;      // every data packet sent, headers included
  std::uint64_t acks_received = 0;
  std::uint64_t bad_packets = 0;        // corrupt, foreign or malformed
};

class ArqSender {
 public:
  using Transmit = std::function<void(std::span<const std::byte>)>;

  explicit ArqSender(const SenderConfig& config);

  // Accepts a message for delivery; false when it is too large, the send buffer
  // is full, the stream is closed or the peer is dead (see error()).
  bool send(std::span<const std::byte> message);
  // Ends the stream: an end-of-stream marker follows the last message.
  void close();
  // A packet from the peer (an ack). `now` is the caller's clock.
  void on_packet(std::span<const std::byte> bytes, Nanos now);
  // The same, decoded already (by a caller that routes packets): anything but
  // a well-formed ack of this conversation is counted as bad.
  void on_packet(const Decoded& packet, Nanos now);
  // The packets were protected at `now` (an FEC repair covering them was sent):
  // their timers restart from now, so a timeout does not resend what the
  // repair is about to rebuild at the receiver.
  void protected_at(std::span<const std::uint32_t> sequences, Nanos now);
  // Emits what is due at `now`: retransmissions, then new packets the windows allow.
  void poll(Nanos now, const Transmit& transmit);
  // When poll() next has work without new input, if ever.
  std::optional<Nanos> next_timeout() const;

  // Everything sent, the end-of-stream marker included, was acknowledged.
  bool finished() const noexcept { return closed_ && fin_sent_ && in_flight_.empty() && queue_.empty(); }
  bool failed() const noexcept { return static_cast<bool>(error_); }
  // Errc::peer_unreachable once the peer is given up; no error before.
  const std::error_code& error() const noexcept { return error_; }
  std::size_t in_flight() const noexcept { return in_flight_.size(); }
  std::size_t queued() const noexcept { return queue_.size(); }
  const SenderStats& stats() const noexcept { return stats_; }
  const RtoEstimator& rto() const noexcept { return rto_; }

 private:
  struct Outstanding {
    std::uint32_t sequence;
    std::vector<std::byte> packet;  // encoded, ready to resend
    Nanos first_sent{0};
    Nanos deadline{0};
    std::uint32_t transmissions = 0;
    bool acked = false;             // selectively acknowledged
    bool fast_retransmitted = false;
  };

  std::uint32_t effective_window() const noexcept;
  void transmit_packet(Outstanding& o, Nanos now, const Transmit& transmit, bool retransmission);
  void acknowledge_through(std::uint32_t cumulative, Nanos now);
  void on_timeout(Nanos now, const Transmit& transmit);
  Outstanding* find(std::uint32_t sequence) noexcept;

  SenderConfig config_;
  RtoEstimator rto_;
  std::deque<std::vector<std::byte>> queue_;  // messages not yet packetised
  std::deque<Outstanding> in_flight_;         // in sequence order, front is the oldest unacked
  std::uint32_t next_sequence_;
  std::uint32_t peer_window_;
  std::uint32_t silent_timeouts_ = 0;
  std::optional<Nanos> backed_off_at_;
  bool closed_ = false;
  bool fin_sent_ = false;
  std::vector<std::uint32_t> fast_pending_;  // sequences to resend at the next poll
  std::error_code error_;
  SenderStats stats_;
};

}  // namespace volley::arq
