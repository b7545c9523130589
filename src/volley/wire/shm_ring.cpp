#include <volley/wire/shm_ring.hpp>

#include <algorithm>
#include <cstring>

#include <volley/wire/error.hpp>

namespace volley::wire {

namespace {

template <class T>
T* field(std::span<std::byte> ring, std::size_t offset) {
  static_assert(std::atomic_ref<T>::is_always_lock_free);
  return reinterpret_cast<T*>(ring.data() + offset);
}

// The words two processes share are reached only through atomic_ref. The
// doorbell handshakes are Dekker's: each side stores its word, then loads the
// other's, both sequentially consistent, so at least one of them sees the other.
template <class T>
T load(T* p, std::memory_order order = std::memory_order_acquire) {
  return std::atomic_ref<T>(*p).load(order);
}
template <class T>
void store(T* p, T v, std::memory_order order = std::memory_order_release) {
  std::atomic_ref<T>(*p).store(v, order);
}
// Clears a word the other side set; true when it was set.
bool take(std::uint32_t* p) {
  if (load(p, std::memory_order_seq_cst) == 0) return false;  // the common case: no store, no cache line taken
  return std::atomic_ref<std::uint32_t>(*p).exchange(0, std::memory_order_acq_rel) != 0;
}

}  // namespace

namespace shm {

void format_region(std::span<std::byte> region, std::size_t capacity) {
  std::memset(region.data(), 0, kRegionHeaderSize + 2 * kRingControlSize);
  std::memset(ring_of(region, capacity, 1).data(), 0, kRingControlSize);
  const std::uint64_t magic = kMagic;
  const std::uint32_t version = kVersion;
  const auto cap = static_cast<std::uint32_t>(capacity);
  std::memcpy(region.data() + kMagicOffset, &magic, sizeof magic);
  std::memcpy(region.data() + kVersionOffset, &version, sizeof version);
  std::memcpy(region.data() + kCapacityOffset, &cap, sizeof cap);
}

std::size_t check_region(std::span<const std::byte> mapped, std::error_code& ec) {
  ec.clear();
  if (mapped.size() < kRegionHeaderSize) {
    ec = Errc::corrupt_ring;
    return 0;
  }
  std::uint64_t magic = 0;
  std::uint32_t version = 0;
  std::uint32_t capacity = 0;
  std::memcpy(&magic, mapped.data() + kMagicOffset, sizeof magic);
  std::memcpy(&version, mapped.data() + kVersionOffset, sizeof version);
  std::memcpy(&capacity, mapped.data() + kCapacityOffset, sizeof capacity);
  if (magic != kMagic || version != kVersion || !valid_capacity(capacity) || mapped.size() < region_size(capacity)) {
    ec = Errc::corrupt_ring;
    return 0;
  }
  return capacity;
}

std::span<std::byte> ring_of(std::span<std::byte> region, std::size_t capacity, int which) {
  return region.subspan(kRegionHeaderSize + static_cast<std::size_t>(which) * ring_size(capacity), ring_size(capacity));
}

}  // namespace shm

ShmRingControl::ShmRingControl(std::span<std::byte> ring)
    : write_index(field<std::uint64_t>(ring, shm::kWriteIndexOffset)),
      writer_waiting(field<std::uint32_t>(ring, shm::kWriterWaitingOffset)),
      writer_closed(field<std::uint32_t>(ring, shm::kWriterClosedOffset)),
      read_index(field<std::uint64_t>(ring, shm::kReadIndexOffset)),
      reader_sleeping(field<std::uint32_t>(ring, shm::kReaderSleepingOffset)) {}

ShmRingWriter::ShmRingWriter(std::span<std::byte> ring, std::size_t capacity)
    : data_(ring.data() + shm::kRingControlSize), capacity_(capacity), control_(ring) {}

std::size_t ShmRingWriter::room(std::error_code& ec) {
  const std::uint64_t read = load(control_.read_index, std::memory_order_seq_cst);  // ask_for_room()'s other half
  const std::uint64_t used = written_ - read;
  if (used > capacity_) {  // the reader claims bytes never written
    ec = Errc::corrupt_ring;
    return 0;
  }
  known_read_ = read;
  return capacity_ - static_cast<std::size_t>(used);
}

std::size_t ShmRingWriter::write(std::span<const std::byte> bytes, std::error_code& ec) {
  const std::size_t n = copy_in(bytes, ec);
  if (n > 0) publish();
  return n;
}

std::size_t ShmRingWriter::copy_in(std::span<const std::byte> bytes, std::error_code& ec) {
  ec.clear();
  // The room the last look at the reader's index showed is still there (the
  // reader only frees more): the reader's cache line is fetched again only
  // when that is not enough.
  std::size_t free = capacity_ - static_cast<std::size_t>(written_ - known_read_);
  if (free < bytes.size()) free = room(ec);
  const std::size_t n = std::min(bytes.size(), free);
  if (ec || n == 0) return 0;
  const std::size_t at = static_cast<std::size_t>(written_) & (capacity_ - 1);
  const std::size_t first = std::min(n, capacity_ - at);
  std::memcpy(data_ + at, bytes.data(), first);
  std::memcpy(data_, bytes.data() + first, n - first);
  written_ += n;
  return n;
}

std::span<std::byte> ShmRingWriter::reserve(std::size_t size, std::error_code& ec) {
  ec.clear();
  const std::size_t at = static_cast<std::size_t>(written_) & (capacity_ - 1);
  if (size == 0 || size > capacity_ - at) return {};  // it would wrap: copy_in() splits it instead
  std::size_t free = capacity_ - static_cast<std::size_t>(written_ - known_read_);
  if (free < size) free = room(ec);
  if (ec || free < size) return {};
  return {data_ + at, size};
}

void ShmRingWriter::commit(std::size_t used) noexcept { written_ += used; }

void ShmRingWriter::publish() {
  // Sequentially consistent: the reader_needs_doorbell() load that follows
  // must not be ordered before it (the other half of ask_for_doorbell()).
  store(control_.write_index, written_, std::memory_order_seq_cst);
}

bool ShmRingWriter::reader_needs_doorbell() { return take(control_.reader_sleeping); }

bool ShmRingWriter::ask_for_room(std::error_code& ec) {
  ec.clear();
  store(control_.writer_waiting, std::uint32_t{1}, std::memory_order_seq_cst);
  if (room(ec) == 0 && !ec) return true;
  store(control_.writer_waiting, std::uint32_t{0});
  return false;
}

void ShmRingWriter::close() { store(control_.writer_closed, std::uint32_t{1}, std::memory_order_seq_cst); }

ShmRingReader::ShmRingReader(std::span<std::byte> ring, std::size_t capacity)
    : data_(ring.data() + shm::kRingControlSize), capacity_(capacity), control_(ring) {}

std::size_t ShmRingReader::readable(std::error_code& ec) const {
  const std::uint64_t written = load(control_.write_index, std::memory_order_seq_cst);
  const std::uint64_t waiting = written - read_;
  if (waiting > capacity_) {  // more than the ring holds, or an index gone back
    ec = Errc::corrupt_ring;
    return 0;
  }
  return static_cast<std::size_t>(waiting);
}

std::size_t ShmRingReader::read(std::span<std::byte> out, std::error_code& ec) {
  ec.clear();
  const std::size_t n = std::min(out.size(), readable(ec));
  if (ec || n == 0) return 0;
  const std::size_t at = static_cast<std::size_t>(read_) & (capacity_ - 1);
  const std::size_t first = std::min(n, capacity_ - at);
  std::memcpy(out.data(), data_ + at, first);
  std::memcpy(out.data() + first, data_, n - first);
  read_ += n;
  // Sequentially consistent: the writer_needs_doorbell() load that follows
  // must not be ordered before it (the other half of ask_for_room()).
  store(control_.read_index, read_, std::memory_order_seq_cst);
  return n;
}

bool ShmRingReader::ask_for_doorbell(std::error_code& ec) {
  ec.clear();
  store(control_.reader_sleeping, std::uint32_t{1}, std::memory_order_seq_cst);
  if (readable(ec) == 0 && !ec && !writer_closed()) return true;
  store(control_.reader_sleeping, std::uint32_t{0});
  return false;
}

void ShmRingReader::awake() {
  if (load(control_.reader_sleeping, std::memory_order_relaxed) != 0) store(control_.reader_sleeping, std::uint32_t{0});
}

bool ShmRingReader::writer_needs_doorbell() { return take(control_.writer_waiting); }

bool ShmRingReader::writer_closed() const { return load(control_.writer_closed, std::memory_order_seq_cst) != 0; }

}  // namespace volley::wire
