#pragma once
// The worker threads of a server, in one of two designs:
//
// - loop per thread (the default): N event loops, one io_context and one
//   thread each. Every connection lives on one loop for its whole life, so
//   its state, and the state of everything else on that loop (per-worker
//   totals), needs no locks.
// - thread pool: one io_context run by N threads. Each connection runs on a
//   strand of its own, so its handlers never run at once, but two
//   connections' handlers may run at the same time on different threads,
//   whatever slot (worker index) they were given: state shared between
//   connections must be thread-safe. Any idle thread takes the next ready
//   connection, so a few busy connections do not queue behind each other on
//   one loop while another thread sleeps.
//
// Either way there are `size()` slots, connections are spread over them
// round-robin, and `slot_executor(w)` serializes work on a slot's own
// bookkeeping (in the loop-per-thread design it is loop w).
#include <cstddef>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <volley/net/io_backend.hpp>

namespace volley::net {

enum class Design { loop_per_thread, thread_pool };
const char* to_string(Design design) noexcept;

class LoopPool {
 public:
  // busy_poll: each thread spins on a zero-timeout poll instead of sleeping in
  // epoll_wait. That burns a CPU per thread but skips the wake-up of a sleeping
  // thread, which is most of a loopback round trip on a virtual machine. In
  // the loop-per-thread design the spinning loop also reads the sockets of
  // (up to eight) connections waiting for input itself, without asking the
  // reactor first, so such loops must be run by start() or run_loop(): a
  // plain io_context::run() would never read them.
  //
  // receive: how plain TCP connections on the loops take their input (see
  // ReceivePath). io_uring where it cannot run (the thread-pool design, a
  // kernel or container without it) logs why and receives through the
  // reactor; receive_path() says which the loops use.
  explicit LoopPool(std::size_t threads, bool busy_poll = false, Design design = Design::loop_per_thread,
                    ReceivePath receive = ReceivePath::reactor);
  ~LoopPool();
  LoopPool(const LoopPool&) = delete;
  LoopPool& operator=(const LoopPool&) = delete;

  Design design() const noexcept { return design_; }
  ReceivePath receive_path() const noexcept { return receive_; }
  // Slots: one per thread.
  std::size_t size() const noexcept { return threads_wanted_; }
  // The io_context of slot `index` (the same one for every slot in the thread-pool design).
  boost::asio::io_context& loop(std::size_t index) noexcept {
    return *loops_[design_ == Design::thread_pool ? 0 : index];
  }
  // Serializes work on slot `index`'s bookkeeping.
  boost::asio::any_io_executor slot_executor(std::size_t index);
  // The executor a new connection in slot `index` runs on: the slot's loop,
  // or in the thread-pool design a strand of its own.
  boost::asio::any_io_executor connection_executor(std::size_t index);
  // Round-robin choice; call from one thread only (the acceptor's).
  std::size_t next_index() noexcept;

  void start();
  // Runs the loops until each returns: slot 0's on the calling thread, the
  // others on threads of their own, then joins them. For a program whose
  // main thread would only wait (a client until its sessions close, after
  // release()): one thread fewer, and a process of one thread is cheaper in
  // every system call on a socket (the kernel takes a file's reference
  // without atomics while no other thread shares the descriptor table).
  void run();
  // Lets each loop finish its pending work and return; join() waits for that.
  void release();
  // Stops the loops now, abandoning pending handlers.
  void stop() noexcept;
  void join();

 private:
  void start_threads(std::size_t first);
  using Guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  Design design_;
  ReceivePath receive_ = ReceivePath::reactor;
  std::size_t threads_wanted_;
  std::vector<std::unique_ptr<boost::asio::io_context>> loops_;
  std::vector<boost::asio::strand<boost::asio::io_context::executor_type>> slot_strands_;  // thread pool only
  std::vector<Guard> guards_;
  std::vector<std::thread> threads_;
  std::size_t next_ = 0;
  bool busy_poll_ = false;
};

// Runs `loop` until it stops or runs out of work, spinning on poll() when
// busy_poll is set (with the spinning reads above where the loop is a
// LoopPool's, in the loop-per-thread design). For loops driven by a thread the
// caller owns; a loop with spinning reads must be run by one thread only.
void run_loop(boost::asio::io_context& loop, bool busy_poll);

}  // namespace volley::net
