#pragma once
// The receiving half of the ARQ schemes, sans-IO. Every data packet is
// answered with an ack: the next sequence awaited, the room left (the window),
// and, for selective repeat, a bitmap of the packets held beyond a hole.
// Stop-and-wait and go-back-N discard what arrives out of order; selective
// repeat keeps it within the window. Messages come out in order, each once,
// through receive(); what the application has not taken yet counts against
// the window, so a slow reader slows the sender down.
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include <volley/arq/packet.hpp>
#include <volley/arq/rto.hpp>
#include <volley/arq/sender.hpp>

namespace volley::arq {

struct ReceiverConfig {
  Scheme scheme = Scheme::selective_repeat;
  std::uint32_t conversation = 1;
  std::uint32_t window = 64;           // packets held out of order at most (selective repeat)
  std::size_t receive_buffer = 4096;   // messages delivered but not yet taken
  std::uint32_t initial_sequence = 0;
};

struct ReceiverStats {
  std::uint64_t packets_received = 0;
  std::uint64_t delivered = 0;               // messages handed out in order
  std::uint64_t duplicates = 0;              // already delivered or already held
  std::uint64_t out_of_order_discarded = 0;  // stop-and-wait and go-back-N
  std::uint64_t outside_window = 0;          // too far ahead, or no room
  std::uint64_t bad_packets = 0;             // corrupt, foreign or malformed
  std::uint64_t acks_sent = 0;
  std::uint64_t bytes_on_wire = 0;           // acks sent
};

class ArqReceiver {
 public:
  using Transmit = std::function<void(std::span<const std::byte>)>;

  explicit ArqReceiver(const ReceiverConfig& config);

  void on_packet(std::span<const std::byte> bytes, Nanos now, const Transmit& transmit);
  // The same, decoded already (by a caller that routes packets): anything but
  // a well-formed data packet of this conversation is counted as bad.
  void on_packet(const Decoded& packet, Nanos now, const Transmit& transmit);
  // The next message in order, if one is ready.
  bool receive(std::vector<std::byte>& message);
  // Sends a window update when taking messages reopened a closed window.
  void poll(Nanos now, const Transmit& transmit);

  // The end-of-stream marker arrived and every message before it was taken.
  bool finished() const noexcept { return fin_delivered_ && ready_.empty(); }
  std::uint32_t expected() const noexcept { return expected_; }
  const ReceiverStats& stats() const noexcept { return stats_; }

 private:
  struct Held {
    std::vector<std::byte> payload;
    bool fin = false;
  };

  std::uint16_t window() const noexcept;
  // Moves from `payload` only when it accepts it.
  bool accept_in_order(std::vector<std::byte>&& payload, bool fin);
  void drain_held();
  void send_ack(const Transmit& transmit);

  ReceiverConfig config_;
  std::uint32_t expected_;
  // Selective repeat: held_[i] is sequence expected_ + i. Slot 0 is empty
  // except while a full receive buffer keeps it from being delivered.
  std::deque<std::optional<Held>> held_;
  std::deque<std::vector<std::byte>> ready_;
  bool fin_delivered_ = false;
  std::uint16_t advertised_ = 1;
  std::vector<std::byte> scratch_;
  ReceiverStats stats_;
};

}  // namespace volley::arq
