#pragma once
// What `volley target` counts. One TargetStats per worker index; the reporter sums them.
#include <array>
#include <cstdint>
#include <vector>

#include <boost/json/object.hpp>

#include <volley/metrics/counter.hpp>
#include <volley/metrics/prometheus.hpp>
#include <volley/gnb/protocol.hpp>

namespace volley::tools {

using metrics::SlotCounter;

// Written by one worker loop in the loop-per-thread design; by every thread
// of the pool in the thread-pool design, with `shared` set.
struct alignas(64) TargetStats {
  bool shared = false;  // the thread-pool design: written by any thread (first: in the hot line)
  struct PerType {
    SlotCounter frames;  // accepted frames
    SlotCounter bytes;   // their wire bytes, header included
    SlotCounter rejected_too_long;
    SlotCounter rejected_too_short;
  };
  std::array<PerType, gnb::kTypeCount> types;
  SlotCounter replies_ack, replies_nack, replies_ack_checksum;
  SlotCounter connections_opened, closed_peer, closed_protocol_error, closed_io_error, closed_shutdown;
  SlotCounter closed_slow_consumer, closed_idle, closed_handshake_failed, closed_mid_frame;
  SlotCounter closed_heartbeat_timeout;
  SlotCounter unknown_type, length_over_maximum;
  SlotCounter keepalives_in, keepalives_out;  // added up as each session closes

  void add(SlotCounter& counter, std::uint64_t n = 1) noexcept { counter.add(n, shared); }
};

// A plain copy of the sums, for reports and progress lines.
struct TargetTotals {
  struct PerType {
    std::uint64_t frames = 0, bytes = 0, rejected_too_long = 0, rejected_too_short = 0;
  };
  std::array<PerType, gnb::kTypeCount> types{};
  std::uint64_t replies_ack = 0, replies_nack = 0, replies_ack_checksum = 0;
  std::uint64_t connections_opened = 0, closed_peer = 0, closed_protocol_error = 0, closed_io_error = 0,
                closed_shutdown = 0, closed_slow_consumer = 0, closed_idle = 0, closed_handshake_failed = 0,
                closed_mid_frame = 0, closed_heartbeat_timeout = 0;
  std::uint64_t unknown_type = 0, length_over_maximum = 0;
  std::uint64_t keepalives_in = 0, keepalives_out = 0;

  std::uint64_t frames() const;
  std::uint64_t bytes() const;
  std::uint64_t rejected() const;
};

TargetTotals sum(const std::vector<TargetStats>& per_loop);
boost::json::object to_json(const TargetTotals& totals);
// The same numbers in the Prometheus text format, for --metrics.
void write_metrics(metrics::PrometheusText& out, const TargetTotals& totals);

}  // namespace volley::tools
