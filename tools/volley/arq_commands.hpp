#pragma once
// Shared by the ARQ tools (arq-send, arq-recv, arq-bench).
#include <optional>
#include <string>

#include <boost/asio/ip/udp.hpp>

#include <volley/arq/fec.hpp>
#include <volley/arq/receiver.hpp>
#include <volley/arq/sender.hpp>

#include "endpoint.hpp"

namespace volley::tools {

// The largest message the ARQ tools carry: one datagram within a 1500-byte MTU, less the ARQ header.
inline constexpr std::size_t kMaxMessageSize = 1472 - arq::kDataHeaderSize;

struct ArqOptions {
  std::string address;
  std::string protocol = "sr";
  std::uint32_t window = 100;  // the classic benchmark's window
  std::uint64_t count = 1000;
  double interval_ms = 25;
  std::size_t size = 1000;
  double fixed_timeout_ms = 0;
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

}  // namespace volley::tools
