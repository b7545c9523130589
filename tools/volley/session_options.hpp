#pragma once
// Command-line flags for a session's policies, shared by the tools that run
// sessions. The bounds on bytes are the connection's: servers take them from
// the listening flags (--max-queued), clients keep net::ConnectionLimits' defaults.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <CLI/CLI.hpp>

#include <volley/net/session.hpp>
#include <volley/net/session_codec.hpp>

namespace volley::tools {

struct SessionFlags {
  std::int64_t heartbeat_ms = 5000;
  unsigned heartbeat_misses = 3;
  std::int64_t idle_timeout_ms = 0;
  net::SessionOptions::OnProtocolError on_protocol_error = net::SessionOptions::OnProtocolError::drop;
  std::string framing = "checked";
  std::size_t max_payload = 1024 * 1024;

  net::SessionOptions options() const;
  std::unique_ptr<net::SessionCodec> make_codec() const;
  // Where this framing's stream splits into frames (one WebSocket message each).
  using FrameSizeFn = std::size_t (*)(std::span<const std::byte>) noexcept;
  FrameSizeFn frame_size() const;
};

// --heartbeat and --heartbeat-misses alone, for programs whose other limits
// are the server's (the gNB target and generator). `what` ends the help line of
// --heartbeat (say what the heartbeat is and who understands it).
void add_heartbeat_flags(CLI::App& cmd, std::int64_t& interval_ms, unsigned& misses, const std::string& what = {});

// `with_framing` false: the program's protocol is fixed (no --framing, --max-payload).
void add_session_flags(CLI::App& cmd, SessionFlags& flags, bool with_framing = true);

}  // namespace volley::tools
