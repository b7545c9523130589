#pragma once
// Unix domain stream sockets, for a client and a server on one host: the same
// TcpConnection, handlers, sessions and framings as over TCP, without TCP's
// stack (no checksums, segments, acknowledgements or Nagle).
//
// An address names one where a TCP host would go, as gRPC's targets do:
//   "unix:/run/svc.sock"    a socket file at that path
//   "unix-abstract:svc"     Linux's abstract namespace: no file, gone with its last descriptor
// Server's `bind`, ReconnectingClient's `host`, connect_tcp() and RpcClient
// take either; the port is then not used.
//
// A connection keeps its descriptor in Asio's TCP socket type, whose reads,
// writes and waits work on any stream socket; only what is TCP's own (Nagle,
// TCP_INQ, the peer's address) is left out, and TcpConnection::peer() names
// the peer by its process instead.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

namespace volley::net {

struct UnixAddress {
  std::string name;       // the path, or the abstract name (without the leading NUL)
  bool abstract = false;  // Linux's abstract namespace
  std::string text() const { return (abstract ? "unix-abstract:" : "unix:") + name; }
};

// The Unix address `text` names, or nullopt when it names none (a host name or
// an IP address).
std::optional<UnixAddress> parse_unix_address(std::string_view text);

// The file a listen_unix made (its device and inode), so that only that file
// is removed, and not one another server has put in its place since.
struct UnixSocketFile {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
};

// A listening socket (non-blocking, close-on-exec) at `address`, or -1 with
// `ec` set. A file already at the path:
//   - a socket that a live server accepts on: refused (address_in_use), left as it is;
//   - a socket nobody answers (its server died without removing it): replaced;
//   - anything else: refused (file_exists), never removed.
// `mode` >= 0: the socket file's permissions (octal 0660: owner and group may
// connect), set before listening so that no client connects in between;
// -1 leaves what the umask gives. `file` identifies the file made, which the
// caller removes when done (remove_unix_socket_file).
int listen_unix(const UnixAddress& address, int mode, UnixSocketFile& file, std::error_code& ec);

// Removes the socket file listen_unix made at `address`, unless another
// server has replaced it since.
void remove_unix_socket_file(const UnixAddress& address, const UnixSocketFile& file);

// A connected socket (non-blocking, close-on-exec) to `address`, or -1 with
// `ec` set (connection_refused: a file nobody accepts on; no_such_file_or_directory).
int connect_unix(const UnixAddress& address, std::error_code& ec);

// For logs and reports: "unix peer pid 1234 uid 1000" (SO_PEERCRED), or the
// empty string when `fd` is not a Unix socket.
std::string describe_unix_peer(int fd);

}  // namespace volley::net
