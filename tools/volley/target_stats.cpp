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

void write_metrics(metrics::PrometheusText& out, const TargetTotals& t) {
  const auto num = [](std::uint64_t v) { return static_cast<double>(v); };
  out.family("volley_gnb_frames_received_total", "counter", "gNB frames accepted, by message type.");
  for (std::size_t i = 0; i < gnb::kTypeCount; ++i)
    out.sample("volley_gnb_frames_received_total", {{"type", gnb::kTypes[i].name}}, num(t.types[i].frames));
  out.family("volley_gnb_received_bytes_total", "counter", "Wire bytes of the accepted gNB frames, by message type.");
  for (std::size_t i = 0; i < gnb::kTypeCount; ++i)
    out.sample("volley_gnb_received_bytes_total", {{"type", gnb::kTypes[i].name}}, num(t.types[i].bytes));
  out.family("volley_gnb_frames_rejected_total", "counter",
             "gNB frames rejected, by message type and reason (type \"unknown\": no known type).");
  for (std::size_t i = 0; i < gnb::kTypeCount; ++i) {
    out.sample("volley_gnb_frames_rejected_total", {{"type", gnb::kTypes[i].name}, {"reason", "body_too_long"}},
               num(t.types[i].rejected_too_long));
    out.sample("volley_gnb_frames_rejected_total", {{"type", gnb::kTypes[i].name}, {"reason", "body_too_short"}},
               num(t.types[i].rejected_too_short));
  }
  out.sample("volley_gnb_frames_rejected_total", {{"type", "unknown"}, {"reason", "unknown_type"}}, num(t.unknown_type));
  out.sample("volley_gnb_frames_rejected_total", {{"type", "unknown"}, {"reason", "length_over_maximum"}},
             num(t.length_over_maximum));
  out.family("volley_gnb_replies_sent_total", "counter", "Replies sent, by kind.");
  out.sample("volley_gnb_replies_sent_total", {{"kind", "ack"}}, num(t.replies_ack));
  out.sample("volley_gnb_replies_sent_total", {{"kind", "nack"}}, num(t.replies_nack));
  out.sample("volley_gnb_replies_sent_total", {{"kind", "ack_checksum"}}, num(t.replies_ack_checksum));
  out.family("volley_connections_opened_total", "counter", "Connections accepted.");
  out.sample("volley_connections_opened_total", num(t.connections_opened));
  out.family("volley_connections_closed_total", "counter", "Connections ended, by reason.");
  const std::pair<const char*, std::uint64_t> closes[] = {
      {"peer_closed", t.closed_peer},        {"protocol_error", t.closed_protocol_error},
      {"io_error", t.closed_io_error},       {"shutdown", t.closed_shutdown},
      {"slow_consumer", t.closed_slow_consumer}, {"idle_timeout", t.closed_idle},
      {"handshake_failed", t.closed_handshake_failed}, {"heartbeat_timeout", t.closed_heartbeat_timeout}};
  for (const auto& [reason, n] : closes) out.sample("volley_connections_closed_total", {{"reason", reason}}, num(n));
  out.family("volley_connections_closed_mid_frame_total", "counter",
             "Connections that ended with part of a frame read (also counted by reason).");
  out.sample("volley_connections_closed_mid_frame_total", num(t.closed_mid_frame));
  out.family("volley_heartbeats_received_total", "counter", "Keepalives received (counted as each connection ends).");
  out.sample("volley_heartbeats_received_total", num(t.keepalives_in));
  out.family("volley_heartbeats_sent_total", "counter", "Keepalives sent (counted as each connection ends).");
  out.sample("volley_heartbeats_sent_total", num(t.keepalives_out));
}

}  // namespace volley::tools
