#pragma once
// The --design and --threads flags of a program whose work is one serialized
// object (the netem relay, an ARQ receiver's channel), run by a net::Server
// with no listener: the object on Server::make_serial_executor(), the
// metrics endpoint's connections on the worker loops.
//
// - loop per thread: the object, with its timers, on the control loop that
//   the calling thread runs; one worker loop for the metrics endpoint's
//   connections, so a scrape never waits for the object's turn.
// - thread pool: one io_context run by `threads` threads, the object on one
//   strand, each scrape's connection on a strand of its own. A link cannot be
//   split over threads without changing what it emulates, but while one
//   thread waits in the kernel another can run the object's next handler.
//
// Either way the object's handlers never run at once: its state needs no lock.
#include <cstddef>
#include <string>

#include <volley/net/server.hpp>

namespace CLI {
class App;
}

namespace volley::tools {

struct ProgramDesign {
  net::Design design = net::Design::loop_per_thread;
  std::size_t threads = 0;  // 0: the design's default (1 loop, or a pool of 2)
};

// Adds --design and --threads to `cmd`; `object` names what is serialized
// ("the relay", "the channel") in the help.
void add_program_design_flags(CLI::App& cmd, ProgramDesign& flags, const char* object);

// Empty when `flags` make sense, else why not (a loop per thread with more
// than one thread: the object has one loop).
std::string check_program_design(const ProgramDesign& flags);

// The Server's options for `flags`: its worker loops as the design wants them,
// no listener; SIGINT, SIGTERM and SIGHUP stop it.
net::ServerOptions program_server_options(const ProgramDesign& flags);

// Threads that run the object's executor, for the report.
std::size_t object_threads(const ProgramDesign& flags);

}  // namespace volley::tools
