#include "listening.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

namespace volley::tools {

void add_listen_flags(CLI::App& cmd, ListenFlags& flags) {
  cmd.add_option("-b,--bind", flags.bind, "Address to listen on")->capture_default_str();
  cmd.add_option("-p,--port", flags.port, "Port to listen on (0: any free port; see the listening line)")
      ->capture_default_str();
  cmd.add_option("--port-file", flags.port_file,
                 "Once ready, write the port listened on to this file (atomically: whole or not at all)");
}

void announce_listening(std::string_view proto, const std::string& address, std::uint16_t port,
                        const std::string& port_file) {
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    const bool written = f != nullptr && std::fprintf(f, "%u\n", static_cast<unsigned>(port)) > 0;
    const bool closed = f != nullptr && std::fclose(f) == 0;
    if (!written || !closed || std::rename(tmp.c_str(), port_file.c_str()) != 0) {
      const int error = errno;
      std::remove(tmp.c_str());
      throw std::runtime_error(fmt::format("cannot write --port-file {}: {}", port_file, std::strerror(error)));
    }
  }
  fmt::print("listening {} {}:{}\n", proto, address, port);
  std::fflush(stdout);
}

}  // namespace volley::tools
