#pragma once
// The datagrams the kernel dropped on a UDP socket because its receive buffer
// was full: a loss no user-space counter can see, and the first thing to look
// at when a UDP benchmark or relay loses packets it should not.
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace volley::net {

// The socket's drop count since it was opened (the `drops` column of
// /proc/self/net/udp or udp6, found by the socket's inode), or nullopt when
// `fd` is not a UDP socket of this network namespace. Reads a /proc file: for
// reports and progress lines, not per datagram.
std::optional<std::uint64_t> udp_receive_drops(int fd);

// The same for many sockets at once: the tables read once (each read of them
// costs a line per UDP socket in the namespace, so reading them per socket
// for many sockets is quadratic).
class UdpDropTable {
 public:
  static UdpDropTable read();
  std::optional<std::uint64_t> drops_of(int fd) const;

 private:
  std::unordered_map<std::uint64_t, std::uint64_t> by_inode_;
};

}  // namespace volley::net
