#pragma once
// Shared by the ARQ tools (arq-send, arq-recv, arq-bench).
#include <optional>
#include <string>

#include <boost/asio/ip/udp.hpp>

#include <volley/arq/fec.hpp>
#include <volley/arq/receiver.hpp>
#include <volley/arq/sender.hpp>

#include "endpoint.hpp"

namespace CLI {
class App;
}

namespace volley::tools {

// The largest message the ARQ tools carry: one datagram within a 1500-byte MTU, less the ARQ header.
inline constexpr std::size_t kMaxMessageSize = 1472 - arq::kDataHeaderSize;

struct ArqOptions {
  std::string address;  // ADDRESS:PORT: the receiver's (arq-send) or where to listen (arq-recv)
  std::string host;     // --address (arq-send) or --bind (arq-recv); with `port`, makes `address`
  std::uint16_t port = 0;
  std::string protocol = "sr";
  std::uint32_t window = 100;  // the classic benchmark's window
  std::uint64_t count = 1000;
  double interval_s = 0.025;
  std::size_t size = 1000;
  double fixed_timeout_s = 0;
  std::uint32_t fast_retransmit_after = 3;  // selective acks past a hole before it is resent
  std::string fec;            // ARQ schemes: "K:M" or "adaptive" repairs after the data; empty: none
  bool echo = false;          // the receiver sends each message back; the sender measures round trips
  double drain_timeout_s = 60;  // after the last message, how long the sender waits for the end
  std::string csv;
  std::string ready_file;
  std::string port_file;
  bool json = false;
};

struct ArqConfigs {
  arq::SenderConfig sender;
  arq::ReceiverConfig receiver;
  std::optional<arq::FecConfig> fec;
};

std::optional<arq::Scheme> parse_scheme(const std::string& name);
ArqConfigs make_configs(const ArqOptions& o);
std::string check_arq_options(const ArqOptions& o);

// Adds --rto (and the old --timeout, in milliseconds) to `cmd`.
void add_rto_flag(CLI::App& cmd, double& fixed_timeout_s);

}  // namespace volley::tools
