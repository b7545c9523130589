#pragma once
// Runs an io_context on the test's thread until a condition holds or a deadline passes.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace volley::test {

// One handler at a time, with a 5 ms timer of its own so that a wait never
// blocks longer, rather than run_for(): on Boost 1.81's io_uring backend,
// run_for() removes its kernel timeout with a request that carries a stale
// user data, and that request's completion can end a live socket operation
// with ENOENT (docs/BENCHMARKS.md, "Asio's io_uring backend").
inline bool run_until(boost::asio::io_context& loop, const std::function<bool()>& done,
                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  boost::asio::steady_timer slice(loop);
  bool slice_pending = false;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    if (loop.stopped()) loop.restart();
    if (!slice_pending) {
      slice_pending = true;
      slice.expires_after(std::chrono::milliseconds(5));
      slice.async_wait([&slice_pending](const boost::system::error_code&) { slice_pending = false; });
    }
    loop.run_one();
  }
  if (slice_pending) {
    slice.cancel();
    // Its handler refers to this frame: let it run before returning.
    while (slice_pending) {
      if (loop.stopped()) loop.restart();
      loop.run_one();
    }
  }
  return done();
}

// run_for() without its kernel timeout (above): the loop runs until it stops
// by itself (out of work, or stop()) or `timeout` passes, when a watchdog
// thread stops it. Then it is restarted, so the loop is left as run_for()
// leaves it. True when it stopped by itself.
inline bool run_bounded(boost::asio::io_context& loop, std::chrono::milliseconds timeout) {
  std::mutex m;
  std::condition_variable returned;
  bool finished = false;
  bool timed_out = false;
  std::thread watchdog([&] {
    std::unique_lock lock(m);
    if (!returned.wait_for(lock, timeout, [&] { return finished; })) {
      timed_out = true;
      loop.stop();
    }
  });
  loop.run();
  {
    const std::lock_guard lock(m);
    finished = true;
  }
  returned.notify_one();
  watchdog.join();
  if (timed_out) loop.restart();
  return !timed_out;
}

}  // namespace volley::test
