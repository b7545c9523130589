#pragma once
// One end of an ARQ conversation, sans-IO: an ArqSender and an ArqReceiver
// sharing one conversation id (so data flows both ways), and FEC when asked
// for: repair packets after the data it sends, and rebuilding from the repairs
// its peer sends (always on, so only the sending side chooses FEC). The UDP
// channel and the virtual-clock simulations both drive this one machine.
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include <volley/arq/fec.hpp>
#include <volley/arq/receiver.hpp>
#include <volley/arq/sender.hpp>

namespace volley::arq {

class ArqEndpoint {
 public:
  using Transmit = std::function<void(std::span<const std::byte> packet)>;
  using Deliver = std::function<void(std::span<const std::byte> message)>;

  ArqEndpoint(const SenderConfig& sender, const ReceiverConfig& receiver, std::optional<FecConfig> fec = std::nullopt);

  // False when the sender refuses (buffer full, too large, closed, peer dead).
  bool send(std::span<const std::byte> message) { return sender_.send(message); }
  void close() { sender_.close(); }
  // A datagram from the peer. Messages now in order go to `deliver`; acks,
  // rebuilt packets' acks and reports go out through `transmit`. False when it
  // was not a packet of this conversation's protocol (counted by the parts).
  void on_datagram(std::span<const std::byte> packet, Nanos now, const Transmit& transmit, const Deliver& deliver);
  // Emits what is due at `now`: the sender's packets, FEC repairs, window updates.
  void poll(Nanos now, const Transmit& transmit);
  std::optional<Nanos> next_timeout() const;

  const ArqSender& sender() const noexcept { return sender_; }
  const ArqReceiver& receiver() const noexcept { return receiver_; }
  const FecEncoder* fec_encoder() const noexcept { return fec_encoder_ ? &*fec_encoder_ : nullptr; }
  const FecDecoder& fec_decoder() const noexcept { return fec_decoder_; }
  // Bytes this end put on the wire: data, repairs, acks and reports.
  std::uint64_t bytes_sent() const noexcept { return bytes_sent_; }
  // Reports that arrived at an end that sends no repairs.
  std::uint64_t unexpected_reports() const noexcept { return unexpected_reports_; }

 private:
  std::uint32_t conversation_;
  ArqSender sender_;
  ArqReceiver receiver_;
  std::optional<FecEncoder> fec_encoder_;
  FecDecoder fec_decoder_;
  bool peer_sends_repairs_ = false;  // data packets are kept for rebuilding only then
  std::vector<std::byte> message_;
  std::uint64_t bytes_sent_ = 0;
  std::uint64_t unexpected_reports_ = 0;
};

}  // namespace volley::arq
