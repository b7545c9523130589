#include "listening.hpp"
#include "output.hpp"

#include "duration_flag.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

namespace volley::tools {

namespace {

void add_shm_spin_flag(CLI::App& cmd, ShmFlags& shm) {
  add_duration_option(cmd, "--shm-spin", shm.spin_s,
                      "With --shm, on loops that sleep: how long a side that found nothing to read keeps looking "
                      "before it asks for a doorbell and sleeps (a stream whose next bytes come sooner makes no "
                      "system call; an idle connection spends this much CPU once per silence; 0: sleep at once)",
                      0.0, 1.0);
}

}  // namespace

void add_bind_flags(CLI::App& cmd, std::string& bind, std::uint16_t& port, const std::string& what) {
  cmd.add_option("-b,--bind", bind, "Address " + what + " (0.0.0.0: every IPv4 interface, :: every one)")
      ->type_name("ADDRESS")
      ->capture_default_str();
  cmd.add_option("-p,--port", port, "Port " + what + " (0: any free port; see the listening line)")
      ->type_name("PORT")
      ->capture_default_str();
}

void add_listen_flags(CLI::App& cmd, ListenFlags& flags) {
  add_bind_flags(cmd, flags.bind, flags.port);
  cmd.add_option("--unix", flags.unix_path,
                 "Listen on this Unix socket instead of --bind/--port (clients on this host only; @NAME: Linux's "
                 "abstract namespace, no file). A file left by a server that died is replaced; one a live server "
                 "listens on is not")
      ->type_name("PATH");
  cmd.add_flag("--shm", flags.shm.on,
               "With --unix: each client's bytes go through shared memory, two rings it maps with the server (the "
               "socket carries the set-up, doorbells and the end)");
  add_shm_spin_flag(cmd, flags.shm);
  cmd.add_option_function<std::string>(
         "--unix-mode",
         [&flags](const std::string& text) {
           if (text == "umask") {
             flags.unix_mode = -1;
             return;
           }
           std::size_t used = 0;
           unsigned long mode = ~0UL;
           try {
             mode = std::stoul(text, &used, 8);
           } catch (const std::exception&) {
           }
           if (used != text.size() || mode > 07777) throw CLI::ValidationError("--unix-mode", "not an octal mode: " + text);
           flags.unix_mode = static_cast<int>(mode);
         },
         "The --unix socket file's permissions, in octal (0660: its owner and group may connect; umask: as the "
         "process's umask leaves them)")
      ->type_name("MODE")
      ->default_str("umask");
  cmd.add_flag("--reuse-port", flags.reuse_port,
               "Share the port with other servers that set it too (SO_REUSEPORT): the kernel spreads new "
               "connections among them, so a new version starts beside the old before the old one stops");
  cmd.add_flag("--drain", flags.drain,
               "On SIGTERM, hand over instead of stopping: stop accepting, tell every peer to finish and go "
               "elsewhere (a session's goodbye frame, WebSocket close 1001, HTTP Connection: close), answer "
               "/healthz with 503 \"draining\", and exit once they have left (SIGINT, or a second signal, "
               "stops at once)");
  add_duration_option(cmd, "--drain-timeout", flags.drain_timeout_s,
                      "With --drain: how long peers get to leave before the rest are closed as on a stop", 0.0,
                      3600.0);
  cmd.add_option("--port-file", flags.port_file,
                 "Once ready, write the port listened on to this file (atomically: whole or not at all; with --unix, "
                 "the socket's address)")
      ->type_name("FILE");
  add_duration_option(cmd, "--shutdown-timeout", flags.shutdown_timeout_s,
                      "On SIGINT/SIGTERM, time to let connections flush and close before aborting the rest "
                      "(a peer that stopped reading cannot hold the stop up)",
                      0.0, 3600.0);
  cmd.add_option("--max-queued", flags.max_queued,
                 "Per connection: bytes of replies queued for a peer that does not read at which the server stops "
                 "reading from it (resuming at a quarter)")
      ->type_name("BYTES")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 34));
  add_duration_option(cmd, "--max-queued-timeout", flags.max_queued_timeout_s,
                      "How long a peer may keep a connection at --max-queued before it is disconnected as a slow "
                      "consumer (0: never)",
                      0.0, 86400.0);
  cmd.add_option("--max-connections", flags.max_connections,
                 "Connections open at once; one more is accepted and closed at once, and counted (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{10'000'000}));
  add_duration_option(cmd, "--idle-timeout", flags.idle_timeout_s,
                      "How long a connection may pass with no byte either way before it is closed (0: never)", 0.0,
                      86400.0);
  cmd.add_option_function<std::string>(
         "--io",
         [&flags](const std::string& name) {
           flags.receive = name == "uring" ? net::ReceivePath::io_uring : net::ReceivePath::reactor;
         },
         fmt::format("How plain TCP connections receive. reactor: the loop's reactor ({} in this build) says when "
                     "a socket is readable, then the connection reads it; uring: each connection keeps a multishot "
                     "receive in its loop's io_uring ring, into buffers the loop provides (Linux 6.1+, the "
                     "loop-per-thread design; where io_uring cannot run, the server says why and uses the reactor)",
                     net::io_backend()))
      ->check(CLI::IsMember({"reactor", "uring"}))
      ->option_text("reactor|uring")
      ->default_str("reactor");
}

void add_connect_flags(CLI::App& cmd, std::string& address, std::uint16_t& port) {
  cmd.add_option("-a,--address", address, "Server address (numeric)")->type_name("ADDRESS")->capture_default_str();
  cmd.add_option("--host", address)->group("");
  cmd.add_option("-p,--port", port, "Server port")->type_name("PORT")->capture_default_str();
}

std::string unix_address_text(const std::string& path) {
  return path.starts_with('@') ? "unix-abstract:" + path.substr(1) : "unix:" + path;
}


void add_unix_connect_flags(CLI::App& cmd, std::string& address, ShmFlags& shm) {
  cmd.add_option_function<std::string>(
         "--unix", [&address](const std::string& path) { address = unix_address_text(path); },
         "Connect to this Unix socket instead of --address/--port (@NAME: Linux's abstract namespace)")
      ->type_name("PATH");
  cmd.add_flag("--shm", shm.on,
               "With --unix: exchange the bytes through shared memory, two rings this client maps with the server "
               "(the socket carries the set-up, doorbells and the end)");
  add_shm_spin_flag(cmd, shm);
}

void add_design_flag(CLI::App& cmd, net::Design& design) {
  cmd.add_option_function<std::string>(
         "--design",
         [&design](const std::string& name) {
           design = name == "thread-pool" ? net::Design::thread_pool : net::Design::loop_per_thread;
         },
         "loop-per-thread: one event loop per worker thread, each connection on one loop for life; "
         "thread-pool: one loop run by every worker thread, each connection on a strand of its own")
      ->check(CLI::IsMember({"loop-per-thread", "thread-pool"}))
      ->option_text("loop-per-thread|thread-pool")
      ->default_str("loop-per-thread");
}

net::ServerOptions server_options(const ListenFlags& flags, std::size_t threads, bool busy_poll) {
  return {.bind = flags.unix_path.empty() ? flags.bind : unix_address_text(flags.unix_path),
          .port = flags.port,
          .threads = threads,
          .busy_poll = busy_poll,
          .receive = flags.receive,
          .handle_signals = true,
          .drain_on_sigterm = flags.drain,
          .drain_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(flags.drain_timeout_s * 1000)),
          .shutdown_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(flags.shutdown_timeout_s * 1000)),
          .connection_limits = {.high_water = flags.max_queued,
                            .low_water = flags.max_queued / 4,
                            .stop_reading_when_full = true,
                            .slow_consumer_timeout =
                                std::chrono::milliseconds(static_cast<std::int64_t>(flags.max_queued_timeout_s * 1000)),
                            .idle_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(flags.idle_timeout_s * 1000))},
          .max_connections = flags.max_connections,
          .unix_mode = flags.unix_mode,
          .reuse_port = flags.reuse_port};
}

namespace {

void write_port_file(const std::string& port_file, const std::string& text) {
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    const bool written = f != nullptr && std::fprintf(f, "%s\n", text.c_str()) > 0;
    const bool closed = f != nullptr && std::fclose(f) == 0;
    if (!written || !closed || std::rename(tmp.c_str(), port_file.c_str()) != 0) {
      const int error = errno;
      std::remove(tmp.c_str());
      throw std::runtime_error(fmt::format("cannot write --port-file {}: {}", port_file, std::strerror(error)));
    }
  }
}

}  // namespace

void announce_listening(std::string_view proto, const std::string& address, std::uint16_t port,
                        const std::string& port_file) {
  write_port_file(port_file, std::to_string(port));
  tools::print("listening {} {}:{}\n", proto, address, port);
  std::fflush(stdout);
}

void announce_server(std::string_view proto, const net::Server& server, const std::string& port_file) {
  const std::string where = server.listening_text();
  if (!where.starts_with("unix"))  // an IP address
    return announce_listening(proto, server.local_endpoint().address().to_string(), server.port(), port_file);
  write_port_file(port_file, where);
  tools::print("listening {} {}\n", proto, where);
  std::fflush(stdout);
}

std::string served_proto(const ListenFlags& listen, std::string_view proto) {
  if (listen.shm.on) return "shm";
  if (!listen.unix_path.empty() && proto == "tcp") return "unix";
  return std::string(proto);
}

}  // namespace volley::tools
