#include <volley/net/detail/write_queue.hpp>

#include <cassert>
#include <cstring>
#include <utility>

namespace volley::net::detail {

WriteQueue::Chunk WriteQueue::take_chunk(std::size_t at_least) {
  if (at_least <= kChunkSize && !pool_.empty()) {
    Chunk c = std::move(pool_.back());
    pool_.pop_back();
    c.used = 0;
    return c;
  }
  if (at_least > kChunkSize && large_spare_.capacity >= at_least) {
    Chunk c = std::move(large_spare_);
    large_spare_ = {};
    c.used = 0;
    return c;
  }
  const std::size_t capacity = at_least <= kChunkSize ? kChunkSize : at_least;
  return Chunk{std::make_unique_for_overwrite<std::byte[]>(capacity), capacity, 0};
}

void WriteQueue::append(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  const std::span<std::byte> dst = append_space(bytes.size());
  std::memcpy(dst.data(), bytes.data(), bytes.size());
}

std::span<std::byte> WriteQueue::append_space(std::size_t size) {
  if (size == 0) return {};
  Chunk* tail = pending_.chunks.empty() ? nullptr : &pending_.chunks.back();
  if (tail == nullptr || tail->capacity - tail->used < size) {
    pending_.chunks.push_back(take_chunk(size));
    tail = &pending_.chunks.back();
  }
  std::byte* dst = tail->data.get() + tail->used;
  tail->used += size;
  pending_.bytes += size;
  // Extend the last segment when the space lies right behind it.
  if (!pending_.segments.empty()) {
    auto& last = pending_.segments.back();
    if (last.data() + last.size() == dst) {
      last = {last.data(), last.size() + size};
      return {dst, size};
    }
  }
  pending_.segments.emplace_back(dst, size);
  return {dst, size};
}

void WriteQueue::give_back(std::size_t unused) noexcept {
  if (unused == 0) return;
  // The reservation is the tail of the last chunk and of the last segment.
  assert(!pending_.chunks.empty() && !pending_.segments.empty());
  assert(pending_.segments.back().size() >= unused && pending_.chunks.back().used >= unused);
  pending_.chunks.back().used -= unused;
  auto& last = pending_.segments.back();
  last = {last.data(), last.size() - unused};
  if (last.empty()) pending_.segments.pop_back();
  pending_.bytes -= unused;
}

void WriteQueue::append_borrowed(std::span<const std::byte> bytes) {
  if (bytes.empty()) return;
  pending_.segments.push_back(bytes);
  pending_.bytes += bytes.size();
}

std::span<const std::span<const std::byte>> WriteQueue::start_batch() {
  assert(!in_flight());
  std::swap(pending_, flight_);
  return flight_.segments;
}

std::size_t WriteQueue::finish_batch() {
  const std::size_t bytes = flight_.bytes;
  recycle(flight_);
  return bytes;
}

void WriteQueue::recycle(Batch& batch) {
  for (auto& c : batch.chunks) {
    if (c.capacity == kChunkSize && pool_.size() < kPooledChunks) {
      pool_.push_back(std::move(c));
    } else if (c.capacity > kChunkSize && c.capacity <= kLargeSpareLimit && c.capacity > large_spare_.capacity) {
      large_spare_ = std::move(c);
    }
  }
  batch.chunks.clear();
  batch.segments.clear();
  batch.bytes = 0;
}

void WriteQueue::clear() {
  recycle(pending_);
  recycle(flight_);
}

}  // namespace volley::net::detail
