#pragma once
// The outgoing side of a connection, without the socket. Small messages are
// copied into pooled chunks back to back (so a burst of replies becomes one
// buffer), large or borrowed ones stay separate buffers, and the whole pending
// set goes out in one gather write (writev) while the next set builds up.
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace volley::net::detail {

class WriteQueue {
 public:
  static constexpr std::size_t kChunkSize = 128 * 1024;  // holds any gNB frame whole
  static constexpr std::size_t kPooledChunks = 4;
  // One larger chunk is kept for the next large message (a 1 MB echo would
  // otherwise map, fault in and unmap a fresh megabyte every time); bigger ones are freed.
  static constexpr std::size_t kLargeSpareLimit = 2 * 1024 * 1024;

  // Copies `bytes`; never fails (memory is bounded by the caller's backpressure).
  void append(std::span<const std::byte> bytes);
  // Reserves `size` contiguous bytes at the end of the queue for the caller to
  // write in place (a frame whose header depends on its payload is then built in
  // one pass); valid until the next append. give_back() returns an unused tail.
  std::span<std::byte> append_space(std::size_t size);
  void give_back(std::size_t unused) noexcept;
  // Queues `bytes` without a copy: the caller keeps them alive and unchanged
  // until a finish_batch() has accounted for them.
  void append_borrowed(std::span<const std::byte> bytes);

  bool has_pending() const noexcept { return !pending_.segments.empty(); }
  bool in_flight() const noexcept { return !flight_.segments.empty(); }
  std::size_t queued_bytes() const noexcept { return pending_.bytes + flight_.bytes; }

  // Moves everything pending into the in-flight batch and returns its buffers,
  // valid until finish_batch(). Requires !in_flight().
  std::span<const std::span<const std::byte>> start_batch();
  // The in-flight batch was written whole; returns its size in bytes.
  std::size_t finish_batch();
  // Drops everything (the connection is gone).
  void clear();

 private:
  struct Chunk {
    std::unique_ptr<std::byte[]> data;
    std::size_t capacity = 0;
    std::size_t used = 0;
  };
  struct Batch {
    std::vector<std::span<const std::byte>> segments;
    std::vector<Chunk> chunks;  // owned storage the segments point into
    std::size_t bytes = 0;
  };

  Chunk take_chunk(std::size_t at_least);
  void recycle(Batch& batch);

  Batch pending_;
  Batch flight_;
  std::vector<Chunk> pool_;
  Chunk large_spare_;
};

}  // namespace volley::net::detail
