#pragma once
// A byte buffer for stream decoders: the socket reads straight into its free tail
// (prepare/commit), the decoder consumes from its head, and the partial frame left
// at the head is moved to the front only when the tail gets too short for the
// largest frame. Allocates once, at construction.
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>

namespace volley::wire::detail {

class StreamBuffer {
 public:
  // `max_frame` is the largest frame the decoder must hold whole; the capacity is
  // at least twice that so a read always has room for a full frame.
  StreamBuffer(std::size_t capacity, std::size_t max_frame)
      : capacity_(capacity < 2 * max_frame ? 2 * max_frame : capacity),
        max_frame_(max_frame),
        data_(std::make_unique_for_overwrite<std::byte[]>(capacity_)) {}

  // Free space at the tail; at least `max_frame` bytes once readable() holds no more than one frame.
  std::span<std::byte> prepare() noexcept {
    if (begin_ == end_) {
      begin_ = end_ = 0;
    } else if (capacity_ - end_ < max_frame_ && begin_ > 0) {
      std::memmove(data_.get(), data_.get() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    return {data_.get() + end_, capacity_ - end_};
  }

  void commit(std::size_t n) noexcept { end_ += n; }
  void consume(std::size_t n) noexcept { begin_ += n; }

  std::span<const std::byte> readable() const noexcept { return {data_.get() + begin_, end_ - begin_}; }
  std::size_t size() const noexcept { return end_ - begin_; }
  std::size_t capacity() const noexcept { return capacity_; }
  void clear() noexcept { begin_ = end_ = 0; }

 private:
  std::size_t capacity_;
  std::size_t max_frame_;
  std::unique_ptr<std::byte[]> data_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

}  // namespace volley::wire::detail
