#pragma once
/// @file
/// A pcapng file of what an emulated link did: every packet it received (on
/// interface 0, "received") and every copy it sent on (interface 1, "sent"),
/// as raw IP packets. Packets the link dropped carry a comment saying why
/// ("netem: lost", "netem: queue full", "netem: link down"); copies it
/// corrupted, duplicated or reordered say so too. Wireshark and tshark open it
/// as it is (`frame.comment`, `frame.interface_name`).
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include <volley/netem/link_model.hpp>

namespace volley::netem {

class PcapWriter {
 public:
  enum class Interface : std::uint32_t { received = 0, sent = 1 };

  /// Creates (truncates) the file and writes the section and interface headers;
  /// throws std::runtime_error when it cannot.
  explicit PcapWriter(const std::string& path);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  /// One raw IPv4 or IPv6 packet, stamped with the wall clock now.
  void write(Interface interface, std::span<const std::byte> ip_packet, std::string_view comment = {});
  void flush();
  std::uint64_t packets() const noexcept { return packets_; }
  /// Write failures (disk full, say): counted, never fatal to the relay.
  std::uint64_t errors() const noexcept { return errors_; }

 private:
  void put(const void* data, std::size_t n);

  std::FILE* file_ = nullptr;
  std::uint64_t packets_ = 0;
  std::uint64_t errors_ = 0;
};

/// The comment a capture gives a packet: why the link dropped it ("netem: lost"),
/// or empty when a copy went on.
std::string capture_comment(const Admission& admission);
/// The comment a capture gives a copy leaving the link ("netem: corrupted,
/// duplicate"), or empty when the link did nothing to it but delay it.
std::string capture_comment(const Departure& departure);

}  // namespace volley::netem
