#pragma once
// What `volley echo-server` and `volley echo-client` share.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

namespace volley::tools {

enum class EchoProto { tcp, tls, udp, ws, wss };

inline const char* to_string(EchoProto p) {
  switch (p) {
    case EchoProto::tcp: return "tcp";
    case EchoProto::tls: return "tls";
    case EchoProto::udp: return "udp";
    case EchoProto::ws: return "ws";
    case EchoProto::wss: return "wss";
  }
  return "?";
}

inline void add_proto_option(CLI::App& cmd, EchoProto& proto) {
  const std::map<std::string, EchoProto> protos{{"tcp", EchoProto::tcp}, {"tls", EchoProto::tls}, {"udp", EchoProto::udp},
                                                {"ws", EchoProto::ws},   {"wss", EchoProto::wss}};
  cmd.add_option("--proto", proto,
                 "tcp, tls (OpenSSL, TLS 1.2/1.3), udp (one datagram per message), ws (WebSocket binary messages) or "
                 "wss (WebSocket over TLS)")
      ->transform(CLI::CheckedTransformer(protos, CLI::ignore_case))
      ->option_text("tcp|tls|udp|ws|wss")
      ->default_str("tcp");
}

inline bool uses_tls(EchoProto p) { return p == EchoProto::tls || p == EchoProto::wss; }
inline bool uses_websocket(EchoProto p) { return p == EchoProto::ws || p == EchoProto::wss; }

inline constexpr std::size_t kEchoUdpBatch = 64;
inline constexpr std::size_t kEchoMaxDatagram = 65507;  // the most an IPv4 UDP datagram carries

struct EchoServerTotals {
  std::uint64_t connections = 0;
  std::uint64_t bytes = 0;
  std::uint64_t datagrams = 0;
  std::uint64_t errors = 0;
  std::uint64_t handshake_failures = 0;
};

}  // namespace volley::tools
