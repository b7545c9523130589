#pragma once
// Why an ARQ stream ended without delivering everything: the error a sender
// reports (ArqSender::error()) and the channels pass to their Done handlers.
// Failures of the operating system (an SCTP send refused) keep their errno in
// std::system_category; no error means success.
#include <system_error>

namespace volley::arq {

enum class Errc {
  peer_unreachable = 1,     // SenderConfig::dead_after retransmission timeouts in a row without an ack
  association_lost,         // SCTP: the peer stopped acknowledging within SCTP's retransmission limit
  association_failed,       // SCTP: the association could not be set up
  unsent_at_peer_shutdown,  // SCTP: the peer shut the association down with messages of ours still queued
};

const std::error_category& arq_category() noexcept;

inline std::error_code make_error_code(Errc e) noexcept { return {static_cast<int>(e), arq_category()}; }

}  // namespace volley::arq

/// @cond TRAITS (the error-code traits: no documentation of their own)
template <>
struct std::is_error_code_enum<volley::arq::Errc> : std::true_type {};
/// @endcond
