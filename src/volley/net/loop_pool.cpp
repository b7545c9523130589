#include <volley/net/loop_pool.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <spdlog/spdlog.h>

namespace volley::net {

LoopPool::LoopPool(std::size_t threads, bool busy_poll) : busy_poll_(busy_poll) {
  if (threads == 0) threads = 1;
  loops_.reserve(threads);
  guards_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    // Concurrency hint 1: each context is run by one thread, so Asio can skip locking.
    loops_.push_back(std::make_unique<boost::asio::io_context>(1));
    guards_.push_back(boost::asio::make_work_guard(*loops_.back()));
    // Asio creates a loop's reactor (epoll, eventfd, timerfd) with its first
    // socket. Doing it now means a loop cannot fail later for want of file
    // descriptors, when the process has run out of them and a connection
    // arrives: that failure would be an exception on the loop's thread.
    boost::asio::ip::tcp::socket reactor_now(*loops_.back());
  }
}

LoopPool::~LoopPool() {
  stop();
  join();
}

std::size_t LoopPool::next_index() noexcept {
  const std::size_t i = next_;
  next_ = (next_ + 1) % loops_.size();
  return i;
}

void LoopPool::start() {
  for (auto& loop : loops_) {
    threads_.emplace_back([ctx = loop.get(), busy = busy_poll_] {
      try {
        run_loop(*ctx, busy);
      } catch (const std::exception& e) {
        // A handler that throws is a bug; say so rather than let the thread die silently.
        spdlog::critical("event loop stopped by an exception: {}", e.what());
        throw;
      }
    });
  }
}

void run_loop(boost::asio::io_context& loop, bool busy_poll) {
  if (!busy_poll) {
    loop.run();
    return;
  }
  // poll() returns 0 both when nothing was ready and when the loop ran out of
  // work or was stopped; stopped() tells the two apart.
  for (;;) {
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
