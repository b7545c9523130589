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

// A counter of one slot of a server's workers, read by any thread: written
// by one thread where each slot is a loop of its own (`shared` false: a plain
// add, as SingleWriterCounter), by any thread of a thread pool (`shared`
// true: an atomic read-modify-write). The flag is the caller's, one per group
// of counters, so a counter stays eight bytes and a group stays in the cache
// lines it had.
class SlotCounter {
 public:
  void add(std::uint64_t n, bool shared) noexcept {
    if (shared) value_.fetch_add(n, std::memory_order_relaxed);
    else value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t load() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

}  // namespace volley::metrics
