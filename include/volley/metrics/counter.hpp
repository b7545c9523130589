#pragma once
// A counter written by one thread (its loop) and read by any (the reporter).
// A relaxed load+store compiles to a plain add, not a locked read-modify-write,
// which matters when it is bumped per message.
#include <atomic>
#include <cstdint>

namespace volley::metrics {

class SingleWriterCounter {
 public:
  void add(std::uint64_t n = 1) noexcept { value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  std::uint64_t load() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

}  // namespace volley::metrics

namespace volley::metrics {

// A counter of one slot of a server's workers: written by one thread where
// each slot is a loop of its own (a plain add, as SingleWriterCounter), by
// any thread of a thread pool (an atomic read-modify-write) once shared() is
// set. Read by any thread.
class SlotCounter {
 public:
  void set_shared(bool shared) noexcept { shared_ = shared; }
  void add(std::uint64_t n = 1) noexcept {
    if (shared_) value_.fetch_add(n, std::memory_order_relaxed);
    else value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t load() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
  bool shared_ = false;
};

}  // namespace volley::metrics
