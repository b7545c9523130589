#pragma once
// A scenario run on a virtual clock: two ArqEndpoints joined by two netem link
// models (the same model the relay runs), time jumping from one event to the
// next. Deterministic for a seed, and a 1000-message scenario takes
// milliseconds, so every variant and seed can be compared; the real-time
// benchmark then checks the figures over sockets.
#include <cstdint>
#include <string>
#include <vector>

#include <volley/arq/endpoint.hpp>
#include <volley/netem/link_model.hpp>

#include "arq_messages.hpp"
#include "arq_scenarios.hpp"

namespace volley::tools {

struct ArqRunResult {
  std::vector<DeliveryRecord> records;  // one per message delivered (or echoed back)
  arq::SenderStats sender;              // the sending end's (for echo, the end that starts)
  arq::ReceiverStats receiver;          // the far end's
  arq::FecEncoderStats fec;             // the sending end's, when it sends repairs
  arq::FecDecoderStats fec_decoder;     // the far end's
  std::uint64_t payload_bytes = 0;      // every direction
  std::uint64_t wire_bytes = 0;         // every packet in every direction, acks and repairs included
  std::uint64_t data_bytes = 0;         // data and repair packets, every direction
  netem::LinkCounters up{}, down{};
  std::string error;
  double seconds = 0;                   // virtual seconds to the last delivery
};

struct ArqSimOptions {
  std::uint32_t window = 100;
  std::size_t size = 1000;
  std::uint32_t fast_retransmit_after = 3;
  double fixed_timeout_s = 0;
};

ArqRunResult simulate_arq(const ArqScenario& scenario, const ArqVariant& variant, const ArqSimOptions& options,
                          std::uint64_t seed);

}  // namespace volley::tools
