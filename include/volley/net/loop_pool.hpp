#pragma once
// N event loops, one io_context and one thread each. Every connection lives on
// exactly one loop for its whole life, so its state needs no locks.
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace volley::net {

class LoopPool {
 public:
  // busy_poll: each loop spins on a zero-timeout poll instead of sleeping in
  // epoll_wait. That burns a CPU per loop but skips the wake-up of a sleeping
  // thread, which is most of a loopback round trip on a virtual machine.
  explicit LoopPool(std::size_t threads, bool busy_poll = false);
  ~LoopPool();
  LoopPool(const LoopPool&) = delete;
  LoopPool& operator=(const LoopPool&) = delete;

  std::size_t size() const noexcept { return loops_.size(); }
  boost::asio::io_context& loop(std::size_t index) noexcept { return *loops_[index]; }
  // Round-robin choice; call from one thread only (the acceptor's).
  std::size_t next_index() noexcept;

  void start();
  // Lets each loop finish its pending work and return; join() waits for that.
  void release();
  // Stops the loops now, abandoning pending handlers.
  void stop() noexcept;
  void join();

 private:
  using Guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  std::vector<std::unique_ptr<boost::asio::io_context>> loops_;
  std::vector<Guard> guards_;
  std::vector<std::thread> threads_;
  std::size_t next_ = 0;
  bool busy_poll_ = false;
};

// Runs `loop` until it stops or runs out of work, spinning on poll() when
// busy_poll is set. For loops driven by a thread the caller owns.
void run_loop(boost::asio::io_context& loop, bool busy_poll);

}  // namespace volley::net
