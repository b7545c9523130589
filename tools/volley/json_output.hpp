#pragma once
// Small helpers shared by the tools' reports.
#include <chrono>
#include <cstdint>
#include <string>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace volley::net {
class Server;
}

namespace volley::tools {

// Pretty enough for people, one object per run for machines.
std::string to_json_text(const boost::json::value& value);

// What a server program's net::Server refused or cut short, and the WebSocket
// floods its transports counted: the same five counters in every server's
// report, as JSON fields and as a text line.
void add_server_counters(boost::json::object& report, const net::Server& server, std::uint64_t websocket_floods);
std::string server_counters_text(const net::Server& server, std::uint64_t websocket_floods);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace volley::tools
