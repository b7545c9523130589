#include <volley/net/loop_pool.hpp>

#include <chrono>

#include <boost/asio/ip/tcp.hpp>
#include <spdlog/spdlog.h>

#include "spin_readers.hpp"
#include "uring_receive.hpp"

namespace volley::net {

const char* to_string(Design design) noexcept {
  return design == Design::thread_pool ? "thread-pool" : "loop-per-thread";
}

namespace {

// The receive path the loops can have: io_uring only where it runs, on loops one thread runs.
ReceivePath usable(ReceivePath wanted, Design design) {
  if (wanted != ReceivePath::io_uring) return wanted;
  if (design == Design::thread_pool) {
    spdlog::warn("receiving through io_uring needs the loop-per-thread design (one thread per ring); "
                 "the thread pool receives through the reactor");
    return ReceivePath::reactor;
  }
  if (const std::string problem = io_uring_receive_problem(); !problem.empty()) {
    spdlog::warn("{}; receiving through the reactor instead", problem);
    return ReceivePath::reactor;
  }
  return wanted;
}

}  // namespace

LoopPool::LoopPool(std::size_t threads, bool busy_poll, Design design, ReceivePath receive)
    : design_(design),
      receive_(usable(receive, design)),
      threads_wanted_(threads == 0 ? 1 : threads),
      busy_poll_(busy_poll) {
  const std::size_t contexts = design_ == Design::thread_pool ? 1 : threads_wanted_;
  loops_.reserve(contexts);
  guards_.reserve(contexts);
  for (std::size_t i = 0; i < contexts; ++i) {
    // Concurrency hint 1: each context is run by one thread, so Asio can skip
    // locking; a pool's context is run by all its threads.
    loops_.push_back(std::make_unique<boost::asio::io_context>(
        design_ == Design::thread_pool ? static_cast<int>(threads_wanted_) : 1));
    guards_.push_back(boost::asio::make_work_guard(*loops_.back()));
    // Asio creates a loop's reactor (epoll, eventfd, timerfd) with its first
    // socket. Doing it now means a loop cannot fail later for want of file
    // descriptors, when the process has run out of them and a connection
    // arrives: that failure would be an exception on the loop's thread.
    boost::asio::ip::tcp::socket reactor_now(*loops_.back());
    // One thread per loop: its connections may wait for input on spinning reads.
    if (busy_poll_ && design_ == Design::loop_per_thread) detail::SpinReaders::enable(*loops_.back());
    if (receive_ == ReceivePath::io_uring) detail::UringReceiver::enable(*loops_.back());
  }
  if (design_ == Design::thread_pool)
    for (std::size_t i = 0; i < threads_wanted_; ++i) slot_strands_.push_back(boost::asio::make_strand(*loops_[0]));
}

boost::asio::any_io_executor LoopPool::slot_executor(std::size_t index) {
  if (design_ == Design::thread_pool) return slot_strands_[index];
  return loops_[index]->get_executor();
}

boost::asio::any_io_executor LoopPool::connection_executor(std::size_t index) {
  if (design_ == Design::thread_pool) return boost::asio::make_strand(*loops_[0]);
  return loops_[index]->get_executor();
}

LoopPool::~LoopPool() {
  stop();
  join();
}

std::size_t LoopPool::next_index() noexcept {
  const std::size_t i = next_;
  next_ = (next_ + 1) % threads_wanted_;
  return i;
}

namespace {

void run_reporting(boost::asio::io_context& loop, bool busy_poll) {
  try {
    run_loop(loop, busy_poll);
  } catch (const std::exception& e) {
    // A handler that throws is a bug; say so rather than let the thread die silently.
    spdlog::critical("event loop stopped by an exception: {}", e.what());
    throw;
  }
}

}  // namespace

void LoopPool::start_threads(std::size_t first) {
  for (std::size_t i = first; i < threads_wanted_; ++i)
    threads_.emplace_back([ctx = &loop(i), busy = busy_poll_] { run_reporting(*ctx, busy); });
}

void LoopPool::start() { start_threads(0); }

void LoopPool::run() {
  start_threads(1);
  run_reporting(loop(0), busy_poll_);
  join();
}

void run_loop(boost::asio::io_context& loop, bool busy_poll) {
  if (!busy_poll) {
    loop.run();
    return;
  }
  detail::SpinReaders* const spinning =
      boost::asio::has_service<detail::SpinReaders>(loop) ? &boost::asio::use_service<detail::SpinReaders>(loop) : nullptr;
  // A poll of the loop's other work (timers, posted handlers, the reactor's
  // descriptors) is a lock and a system call (epoll_wait), and input that
  // arrives during it waits for it. So while connections spin it comes right
  // after a turn that found input (the replies' completions run while the
  // peer is busy with them), though at most once a microsecond: a spinning
  // read that costs a few nanoseconds (shared memory) is not followed by one
  // every time. A turn that found nothing is followed by one only every
  // 20 microseconds: an idle spinner stays on its sockets, and the other
  // work waits at most that long.
  // poll() returns 0 both when nothing was ready and when the loop ran out of
  // work or was stopped; stopped() tells the two apart.
  using Clock = std::chrono::steady_clock;
  constexpr auto kPollAfterInput = std::chrono::microseconds(1);
  constexpr auto kPollWhileIdle = std::chrono::microseconds(20);
  auto polled = Clock::now();
  for (;;) {
    if (spinning != nullptr && spinning->spinning()) {
      const bool found = spinning->spin();
      const auto now = Clock::now();
      if (now - polled < (found ? kPollAfterInput : kPollWhileIdle)) continue;
      polled = now;
    }
    if (loop.poll() == 0 && loop.stopped()) return;
  }
}

void LoopPool::release() {
  for (auto& g : guards_) g.reset();
}

void LoopPool::stop() noexcept {
  for (auto& loop : loops_) loop->stop();
}

void LoopPool::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace volley::net
