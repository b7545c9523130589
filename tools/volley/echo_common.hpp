#pragma once
// What `volley echo-server` and `volley echo-client` share.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

namespace volley::tools {

enum class EchoProto { tcp, tls, udp };

inline const char* to_string(EchoProto p) {
  switch (p) {
    case EchoProto::tcp: return "tcp";
    case EchoProto::tls: return "tls";
    case EchoProto::udp: return "udp";
  }
  return "?";
}

inline void add_proto_option(CLI::App& cmd, EchoProto& proto) {
  const std::map<std::string, EchoProto> protos{{"tcp", EchoProto::tcp}, {"tls", EchoProto::tls}, {"udp", EchoProto::udp}};
  cmd.add_option("--proto", proto, "tcp, tls (OpenSSL, TLS 1.2/1.3) or udp (one datagram per message)")
      ->transform(CLI::CheckedTransformer(protos, CLI::ignore_case))
      ->capture_default_str();
}

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
