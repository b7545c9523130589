#include "target_stats.hpp"

#include <boost/json/array.hpp>

namespace volley::tools {

std::uint64_t TargetTotals::frames() const {
  std::uint64_t n = 0;
  for (const auto& t : types) n += t.frames;
  return n;
}

std::uint64_t TargetTotals::bytes() const {
  std::uint64_t n = 0;
  for (const auto& t : types) n += t.bytes;
  return n;
}

std::uint64_t TargetTotals::rejected() const {
  std::uint64_t n = unknown_type + length_over_maximum;
  for (const auto& t : types) n += t.rejected_too_long + t.rejected_too_short;
  return n;
}

TargetTotals sum(const std::vector<TargetStats>& per_loop) {
  TargetTotals t;
  for (const TargetStats& s : per_loop) {
    for (std::size_t i = 0; i < t.types.size(); ++i) {
      t.types[i].frames += s.types[i].frames.load();
      t.types[i].bytes += s.types[i].bytes.load();
      t.types[i].rejected_too_long += s.types[i].rejected_too_long.load();
      t.types[i].rejected_too_short += s.types[i].rejected_too_short.load();
    }
    t.replies_ack += s.replies_ack.load();
    t.replies_nack += s.replies_nack.load();
    t.replies_ack_checksum += s.replies_ack_checksum.load();
    t.connections_opened += s.connections_opened.load();
    t.closed_peer += s.closed_peer.load();
    t.closed_protocol_error += s.closed_protocol_error.load();
    t.closed_io_error += s.closed_io_error.load();
    t.closed_shutdown += s.closed_shutdown.load();
    t.closed_slow_consumer += s.closed_slow_consumer.load();
    t.closed_idle += s.closed_idle.load();
    t.closed_handshake_failed += s.closed_handshake_failed.load();
    t.closed_mid_frame += s.closed_mid_frame.load();
    t.closed_heartbeat_timeout += s.closed_heartbeat_timeout.load();
    t.keepalives_in += s.keepalives_in.load();
    t.keepalives_out += s.keepalives_out.load();
    t.unknown_type += s.unknown_type.load();
    t.length_over_maximum += s.length_over_maximum.load();
  }
  return t;
}

boost::json::object to_json(const TargetTotals& t) {
  boost::json::array types;
  for (std::size_t i = 0; i < t.types.size(); ++i) {
    const auto& info = gnb::kTypes[i];
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%04x", static_cast<unsigned>(info.type));
    types.push_back(boost::json::object{
        {"type", hex},
        {"name", info.name},
        {"frames", t.types[i].frames},
        {"bytes", t.types[i].bytes},
        {"rejected", boost::json::object{{"body_too_long", t.types[i].rejected_too_long},
                                         {"body_too_short", t.types[i].rejected_too_short}}},
    });
  }
  return boost::json::object{
      {"types", std::move(types)},
      {"frames", t.frames()},
      {"bytes", t.bytes()},
      {"protocol_errors",
       boost::json::object{{"unknown_type", t.unknown_type}, {"length_over_maximum", t.length_over_maximum}}},
      {"replies", boost::json::object{{"ack", t.replies_ack},
                                      {"nack", t.replies_nack},
                                      {"ack_checksum", t.replies_ack_checksum}}},
      {"connections", boost::json::object{{"accepted", t.connections_opened},
                                          {"closed_by_peer", t.closed_peer},
                                          {"closed_protocol_error", t.closed_protocol_error},
                                          {"closed_io_error", t.closed_io_error},
                                          {"closed_shutdown", t.closed_shutdown},
                                          {"closed_slow_consumer", t.closed_slow_consumer},
                                          {"closed_idle", t.closed_idle},
                                          {"closed_handshake_failed", t.closed_handshake_failed},
                                          {"closed_heartbeat_timeout", t.closed_heartbeat_timeout},
                                          {"closed_mid_frame", t.closed_mid_frame}}},
      {"keepalives", boost::json::object{{"received", t.keepalives_in}, {"sent", t.keepalives_out}}},
  };
}

}  // namespace volley::tools
