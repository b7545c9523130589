#include "session_options.hpp"

#include <map>

#include "duration_flag.hpp"

#include <volley/gnb/protocol.hpp>
#include <volley/gnb/session_codec.hpp>
#include <volley/rpc/frame.hpp>
#include <volley/wire/checked.hpp>
#include <volley/rpc/session_codec.hpp>

namespace volley::tools {

net::SessionOptions SessionFlags::options() const {
  net::SessionOptions o;
  o.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  o.heartbeat_misses = heartbeat_misses;
  o.idle_timeout = std::chrono::milliseconds(idle_timeout_ms);
  o.on_protocol_error = on_protocol_error;
  return o;
}

std::unique_ptr<net::SessionCodec> SessionFlags::make_codec() const {
  if (framing == "gnb") return gnb::make_gnb_codec();
  if (framing == "rpc") return rpc::make_rpc_codec();
  return net::make_checked_codec(max_payload);
}

void add_heartbeat_flags(CLI::App& cmd, std::int64_t& interval_ms, unsigned& misses, const std::string& what) {
  add_duration_option(cmd, "--heartbeat", interval_ms,
                      "Heartbeat interval; a peer silent for interval x misses is disconnected (0: off)" + what, 0.0,
                      3600.0);
  add_old_duration_alias(cmd, "--heartbeat-ms", interval_ms, 0.0, 3600.0);
  cmd.add_option("--heartbeat-misses", misses, "Heartbeat intervals of silence tolerated")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
}

SessionFlags::FrameSizeFn SessionFlags::frame_size() const {
  if (framing == "gnb") return gnb::frame_size;
  if (framing == "rpc") return rpc::frame_size;
  return wire::checked::frame_size;
}

void add_session_flags(CLI::App& cmd, SessionFlags& f, bool with_framing) {
  if (with_framing)
    cmd.add_option("--framing", f.framing,
                   "checked ([u24 length][u8 type][u8 xor][payload], heartbeat = type 0), gnb (whole gNB frames, "
                   "keepalive = six zero bytes) or rpc (whole RPC frames, keepalive = message id 0xFFFFFFFE)")
        ->check(CLI::IsMember({"checked", "gnb", "rpc"}))
        ->option_text("checked|gnb|rpc")
        ->capture_default_str();
  add_heartbeat_flags(cmd, f.heartbeat_ms, f.heartbeat_misses);
  add_duration_option(cmd, "--message-idle-timeout", f.idle_timeout_ms,
                      "Close a session with no message either way for this long (heartbeats do not count; 0: never)",
                      0.0, 86400.0);
  add_old_duration_alias(cmd, "--idle-timeout-ms", f.idle_timeout_ms, 0.0, 86400.0);
  const std::map<std::string, net::SessionOptions::OnProtocolError> policies{
      {"drop", net::SessionOptions::OnProtocolError::drop}, {"close", net::SessionOptions::OnProtocolError::close}};
  cmd.add_option("--on-protocol-error", f.on_protocol_error,
                 "A bad frame (checksum, type, length) is counted and then: drop (skip it, go on) or close")
      ->transform(CLI::CheckedTransformer(policies, CLI::ignore_case))
      ->option_text("drop|close")
      ->default_str(f.on_protocol_error == net::SessionOptions::OnProtocolError::drop ? "drop" : "close");
  if (with_framing)
    cmd.add_option("--max-payload", f.max_payload, "Largest checked-frame payload accepted")
        ->type_name("BYTES")
        ->check(CLI::Range(std::size_t{1}, std::size_t{0xFFFFFF - 5}))
        ->capture_default_str();
}

}  // namespace volley::tools
