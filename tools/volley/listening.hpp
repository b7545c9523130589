#pragma once
// The one way every server program says it is ready: a
// "listening <proto> <address>:<port>" line on stdout and, when asked, the
// port written to --port-file (whole, or not at all). Call it only once the
// program's signal handling is in place (net::Server::on_ready is that point).
#include <cstdint>
#include <string>
#include <string_view>

#include <volley/net/server.hpp>

#include "tls_flags.hpp"

namespace CLI {
class App;
}

namespace volley::tools {

// The address every server program listens on unless --bind says otherwise:
// this host only, so that a benchmark server is never open to the network by
// surprise.
inline constexpr const char* kDefaultBind = "127.0.0.1";

// The flags every server program shares.
struct ListenFlags {
  std::string bind = kDefaultBind;
  std::uint16_t port = 0;
  std::string port_file;
  double shutdown_timeout_s = 5;
  std::size_t max_queued = 4 << 20;  // per connection: reading pauses here (net::ConnectionLimits)
  double max_queued_timeout_s = 10;  // a peer that keeps a connection there this long is disconnected
  std::size_t max_connections = 0;   // 0: no limit
  double idle_timeout_s = 0;         // a connection with no byte either way this long is closed (0: never)
  net::ReceivePath receive = net::ReceivePath::reactor;  // --io
  std::string unix_path{};  // --unix: listen on this Unix socket instead ("@NAME": abstract)
  int unix_mode = -1;     // --unix-mode
  ShmFlags shm{};         // --shm, --shm-spin: the connections' bytes through shared memory (apply_shm)
  bool reuse_port = false;  // --reuse-port
  bool drain = false;       // --drain: SIGTERM drains (net::Server::drain)
  double drain_timeout_s = 10;
};

// Adds -b/--bind, -p/--port, --unix, --unix-mode, --reuse-port, --drain,
// --drain-timeout, --port-file, --shutdown-timeout, --max-queued, --max-queued-timeout, --max-connections,
// --idle-timeout and --io to `cmd`, with `flags` holding the defaults.
void add_listen_flags(CLI::App& cmd, ListenFlags& flags);

// Adds -b/--bind and -p/--port, where a server program listens; `what` ends
// "Address ..." and "Port ..." in the help.
void add_bind_flags(CLI::App& cmd, std::string& bind, std::uint16_t& port, const std::string& what = "to listen on");

// Adds -a/--address and -p/--port, naming the server a client program connects
// to (the same two flags in every client; --host is the old spelling).
void add_connect_flags(CLI::App& cmd, std::string& address, std::uint16_t& port);

// The Unix address a --unix value names: "unix:PATH", or "unix-abstract:NAME" for "@NAME".
std::string unix_address_text(const std::string& path);

// Adds --unix PATH to a client program: it connects to that Unix socket
// instead of --address/--port (`address` becomes its unix_socket.hpp address);
// and --shm, the bytes through shared memory set up over it (shm_client_transport).
void add_unix_connect_flags(CLI::App& cmd, std::string& address, ShmFlags& shm);

// Adds --design loop-per-thread|thread-pool (net::LoopPool says what each is).
void add_design_flag(CLI::App& cmd, net::Design& design);

// The net::Server options these flags and a program's threading choice make.
net::ServerOptions server_options(const ListenFlags& flags, std::size_t threads, bool busy_poll = false);

// Prints the listening line (flushed) and writes the port file atomically
// (a temporary file renamed into place). Throws std::runtime_error when the
// port file cannot be written: a caller waiting for it would wait forever.
void announce_listening(std::string_view proto, const std::string& address, std::uint16_t port,
                        const std::string& port_file);
// The same for a net::Server: "listening PROTO ADDRESS:PORT", or
// "listening PROTO unix:PATH" (whose port file holds that address).
void announce_server(std::string_view proto, const net::Server& server, const std::string& port_file);
// What a stream server's listening line and log call its protocol: `proto`
// (tcp, tls, ws, wss), except shm with --shm and unix for plain bytes on a
// Unix socket, which are not TCP.
std::string served_proto(const ListenFlags& listen, std::string_view proto);

}  // namespace volley::tools
