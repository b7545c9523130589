#pragma once
// A byte buffer for stream decoders: the socket reads straight into its free tail
// (prepare/commit), the decoder consumes from its head, and the partial frame left
// at the head is moved to the front when the tail gets short.
//
// Its memory follows the traffic, not the largest frame the protocol allows:
// nothing is allocated before the first read; the read size starts at `base`,
// doubles (up to `read_limit`) while reads fill it, and halves back after 64
// reads in a row that used under a quarter of it; a frame whose header says it
// is larger than the buffer grows the buffer to hold that frame whole, and the
// buffer goes back to the read size when it is empty after 64 reads in which no
// frame needed more. So an idle connection holds nothing, a connection of small
// messages holds `base`, a one-off large frame costs memory for a while, and a
// stream of large frames keeps its buffer rather than allocating per frame.
// Steady traffic allocates nothing: the sizes settle, and one allocation
// follows each change.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>

namespace volley::wire::detail {

class StreamBuffer {
 public:
  static constexpr std::size_t kDefaultBase = 16 * 1024;
  static constexpr std::size_t kDefaultReadLimit = 256 * 1024;

  explicit StreamBuffer(std::size_t base = kDefaultBase, std::size_t read_limit = kDefaultReadLimit)
      : base_(std::max<std::size_t>(base, 64)), read_limit_(std::max(read_limit, base_)), target_(base_) {}

  // Free space at the tail, never empty. `frame_size`: the whole size of the
  // frame at the head once its (validated) header said so, 0 before: the
  // buffer then holds that frame whole.
  std::span<std::byte> prepare(std::size_t frame_size = 0) {
    if (frame_size > target_) reads_since_large_ = 0;
    if (begin_ == end_) {
      begin_ = end_ = 0;
      if (capacity_ > target_ && reads_since_large_ >= kQuietReads) reallocate(target_);
    }
    const std::size_t held = end_ - begin_;
    const std::size_t required = std::max(frame_size, held + 1);  // from the head
    if (capacity_ < std::max(required, target_)) {
      reallocate(std::max(required, target_));
    } else if (begin_ > 0 && (capacity_ - begin_ < required || capacity_ - end_ < capacity_ / 4)) {
      // Compacting at a quarter, not at half: the gNB handler benchmark's
      // 8000-byte mix ran 25% slower at half (reads that large cool the cache).
      std::memmove(data_.get(), data_.get() + begin_, held);
      begin_ = 0;
      end_ = held;
    }
    offered_ = capacity_ - end_;
    return {data_.get() + end_, offered_};
  }

  void commit(std::size_t n) noexcept {
    end_ += n;
    if (reads_since_large_ < kQuietReads) ++reads_since_large_;
    // A read that filled a tail of at least half the read size: read more at
    // once. (A read that only filled a short tail says nothing, and counting it
    // made the size swing between two values, an allocation each time.)
    if (n == offered_ && offered_ >= target_ / 2 && target_ < read_limit_) {
      target_ = std::min(target_ * 2, read_limit_);
      quiet_reads_ = 0;
    } else if (n < target_ / 4 && target_ > base_) {
      if (++quiet_reads_ == kQuietReads) {
        target_ = std::max(target_ / 2, base_);
        quiet_reads_ = 0;
      }
    } else {
      quiet_reads_ = 0;
    }
  }
  void consume(std::size_t n) noexcept { begin_ += n; }

  std::span<const std::byte> readable() const noexcept { return {data_.get() + begin_, end_ - begin_}; }
  std::size_t size() const noexcept { return end_ - begin_; }
  // The bytes held now (0 before the first read), and the read size it aims for.
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t read_size() const noexcept { return target_; }
  void clear() noexcept { begin_ = end_ = 0; }

 private:
  static constexpr int kQuietReads = 64;

  void reallocate(std::size_t capacity) {
    auto data = std::make_unique_for_overwrite<std::byte[]>(capacity);
    const std::size_t held = end_ - begin_;
    if (held > 0) std::memcpy(data.get(), data_.get() + begin_, held);
    data_ = std::move(data);
    capacity_ = capacity;
    begin_ = 0;
    end_ = held;
  }

  std::size_t base_;
  std::size_t read_limit_;
  std::size_t target_;
  std::size_t capacity_ = 0;
  std::unique_ptr<std::byte[]> data_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  std::size_t offered_ = 0;  // the tail prepare() last handed out
  int quiet_reads_ = 0;
  int reads_since_large_ = kQuietReads;
};

}  // namespace volley::wire::detail
