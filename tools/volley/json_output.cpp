// Boost.JSON is used header-only: its sources are compiled once, here.
#include <boost/json/src.hpp>

#include "json_output.hpp"

#include <fmt/format.h>

#include <volley/net/server.hpp>

namespace volley::tools {

std::string to_json_text(const boost::json::value& value) { return boost::json::serialize(value); }

void add_server_counters(boost::json::object& report, const net::Server& server, std::uint64_t websocket_floods) {
  report["refused_connections"] = server.refused_connections();
  report["over_limit_connections"] = server.over_limit_connections();
  report["handshake_failures"] = server.handshake_failures();
  report["handshakes"] = server.handshakes();
  report["resumed_handshakes"] = server.resumed_handshakes();
  report["aborted_at_shutdown"] = server.aborted_at_shutdown();
  report["websocket_floods"] = websocket_floods;
}

std::string server_counters_text(const net::Server& server, std::uint64_t websocket_floods) {
  return fmt::format("connections refused while out of descriptors {}, over --max-connections {}, handshakes "
                     "(TLS, WebSocket upgrade) finished {} (TLS sessions resumed {}) and failed {}, WebSocket floods "
                     "{}, aborted at the shutdown deadline {}",
                     server.refused_connections(), server.over_limit_connections(), server.handshakes(),
                     server.resumed_handshakes(), server.handshake_failures(), websocket_floods,
                     server.aborted_at_shutdown());
}

}  // namespace volley::tools
