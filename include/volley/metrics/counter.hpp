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
