#pragma once
// The threads of a server program whose work is one serialized object (the
// netem relay's link, an ARQ receiver's channel), in either net::Design:
//
// - loop per thread: the object, with its signals and timers, on one loop
//   that the calling thread runs; the metrics endpoint's connections on a
//   loop of their own thread, so a scrape never waits for the object's turn.
// - thread pool: one io_context run by `threads` threads. The object, its
//   signals and timers, and the metrics endpoint's acceptor run on one
//   strand; each scrape's connection on a strand of its own. A link cannot be
//   split over threads without changing what it emulates, but while one
//   thread waits in the kernel another can run the object's next handler.
//
// Either way the object's handlers never run at once: its state needs no lock.
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <volley/net/loop_pool.hpp>

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

class ProgramLoops {
 public:
  explicit ProgramLoops(const ProgramDesign& flags);
  ProgramLoops(const ProgramLoops&) = delete;
  ProgramLoops& operator=(const ProgramLoops&) = delete;

  net::Design design() const noexcept { return design_; }
  // Threads that run the object's executor.
  std::size_t threads() const noexcept { return design_ == net::Design::thread_pool ? pool_.size() : 1; }
  // Where the object, its signals and timers, and the metrics endpoint's acceptor run.
  const boost::asio::any_io_executor& executor() const noexcept { return executor_; }
  // Where the metrics endpoint's connections run.
  net::LoopPool& metrics_workers() noexcept { return pool_; }

  // Runs the threads until the object's executor has no work left, or at
  // once after stop(). Call once, from the thread that made this.
  void run();
  // Abandons whatever is pending (a scrape still open is dropped). Any thread.
  void stop() noexcept;

 private:
  net::Design design_;
  std::unique_ptr<boost::asio::io_context> own_loop_;  // loop per thread: the object's
  net::LoopPool pool_;  // loop per thread: the metrics endpoint's loop; thread pool: every thread
  boost::asio::any_io_executor executor_;
  std::atomic<bool> stopped_{false};
};

}  // namespace volley::tools
