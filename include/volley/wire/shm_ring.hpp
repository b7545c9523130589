#pragma once
// The shared-memory transport's wire format: one region that two processes
// map, holding a header and two single-producer/single-consumer byte rings,
// one each way (docs/PROTOCOL.md, "Shared-memory rings", byte by byte).
// Pure logic: no system calls and no clocks. The transport that maps the
// region (volley/net/shm.hpp) rings the peer's doorbell when these say so.
//
// The peer is untrusted memory. Each side keeps its own index privately and
// only publishes it; the peer's index is read once per call and checked (a
// reader never claims more than was written, a writer never more than the
// ring holds), so a corrupt or hostile peer gets Errc::corrupt_ring and never
// an out-of-bounds access. Bytes are copied out of the ring before anyone
// looks at them: the peer cannot change a message while it is being parsed.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>

namespace volley::wire {

namespace shm {

// The region: a header, the client's ring (client to server), the server's ring.
inline constexpr std::uint64_t kMagic = 0x315953454c4c4f56;  // "VOLLEYS1", little-endian
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::size_t kRegionHeaderSize = 64;
// In the region header: magic (u64), version (u32), each ring's capacity (u32); the rest zero.
inline constexpr std::size_t kMagicOffset = 0;
inline constexpr std::size_t kVersionOffset = 8;
inline constexpr std::size_t kCapacityOffset = 12;
// Each ring: its control block, then `capacity` bytes of data. Fields a side
// writes are a cache line apart from those the other side writes.
inline constexpr std::size_t kWriteIndexOffset = 0;        // u64, the writer's: bytes written in all
inline constexpr std::size_t kWriterWaitingOffset = 8;     // u32, the writer's: 1 while it waits for room
inline constexpr std::size_t kWriterClosedOffset = 12;     // u32, the writer's: 1 after its last byte
inline constexpr std::size_t kReadIndexOffset = 64;        // u64, the reader's: bytes read in all
inline constexpr std::size_t kReaderSleepingOffset = 72;   // u32, the reader's: 1 while it waits for a doorbell
inline constexpr std::size_t kRingControlSize = 128;
inline constexpr std::size_t kMinCapacity = 4096;
inline constexpr std::size_t kMaxCapacity = std::size_t{1} << 30;

constexpr std::size_t ring_size(std::size_t capacity) { return kRingControlSize + capacity; }
constexpr std::size_t region_size(std::size_t capacity) { return kRegionHeaderSize + 2 * ring_size(capacity); }
constexpr bool valid_capacity(std::size_t capacity) {
  return capacity >= kMinCapacity && capacity <= kMaxCapacity && (capacity & (capacity - 1)) == 0;
}

// Writes a fresh region's header and zeroes both control blocks (`region` is
// region_size(capacity) bytes; capacity valid).
void format_region(std::span<std::byte> region, std::size_t capacity);
// Checks a region the peer made: its magic, version and capacity, against
// the `mapped` bytes. Returns the capacity, or 0 with `ec` set.
std::size_t check_region(std::span<const std::byte> mapped, std::error_code& ec);
// Ring `which` of a region (0: the client's, 1: the server's).
std::span<std::byte> ring_of(std::span<std::byte> region, std::size_t capacity, int which);

}  // namespace shm

// The words of one ring's control block (shm::k*Offset), as mapped.
struct ShmRingControl {
  ShmRingControl() = default;
  explicit ShmRingControl(std::span<std::byte> ring);
  std::uint64_t* write_index = nullptr;
  std::uint32_t* writer_waiting = nullptr;
  std::uint32_t* writer_closed = nullptr;
  std::uint64_t* read_index = nullptr;
  std::uint32_t* reader_sleeping = nullptr;
};

// The writing side of one ring.
class ShmRingWriter {
 public:
  ShmRingWriter() = default;
  // `ring`: ring_size(capacity) bytes of mapped memory, capacity valid.
  ShmRingWriter(std::span<std::byte> ring, std::size_t capacity);

  // Copies as much of `bytes` as there is room for and publishes it; returns
  // how much (0: full). corrupt_ring when the reader's index is impossible.
  std::size_t write(std::span<const std::byte> bytes, std::error_code& ec);
  // write() in two steps, for a batch of pieces published once: copy_in()
  // each (the reader sees nothing yet), then publish() them all.
  std::size_t copy_in(std::span<const std::byte> bytes, std::error_code& ec);
  void publish();
  // Building a message in place (no copy of its own): room for `size` bytes in
  // one piece at the write position, or empty when the ring has not that much
  // free before its end or the reader's index (then copy_in() the message).
  // commit() takes the first `used` bytes of it as copy_in() would.
  std::span<std::byte> reserve(std::size_t size, std::error_code& ec);
  void commit(std::size_t used) noexcept;
  // After writes: whether the reader said it sleeps, so its doorbell must be
  // rung (once: this clears its word). A busy-polling reader never says so.
  bool reader_needs_doorbell();
  // Before waiting for room: asks the reader to ring this side's doorbell
  // when it frees some. False (nothing asked) when room appeared meanwhile.
  bool ask_for_room(std::error_code& ec);
  // The last byte is written: the reader sees the end after reading it all.
  void close();
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  // Looks at the reader's index (checked), and notes it.
  std::size_t room(std::error_code& ec);

  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::uint64_t written_ = 0;     // ours, kept here: what the ring says is only published
  std::uint64_t known_read_ = 0;  // the reader's index when last looked at (checked then)
  ShmRingControl control_;
};

// The reading side of one ring.
class ShmRingReader {
 public:
  ShmRingReader() = default;
  ShmRingReader(std::span<std::byte> ring, std::size_t capacity);

  // Copies up to `out.size()` bytes out and frees their room; returns how
  // many (0: empty, or the end when writer_closed()). corrupt_ring when the
  // writer's index is impossible.
  std::size_t read(std::span<std::byte> out, std::error_code& ec);
  // Bytes waiting (checked as read() checks them).
  std::size_t readable(std::error_code& ec) const;
  // Before sleeping: asks the writer to ring the doorbell with its next
  // bytes. False (nothing asked) when bytes came meanwhile: read them instead.
  bool ask_for_doorbell(std::error_code& ec);
  // Awake again (a doorbell, or any other reason to read).
  void awake();
  // After reads: whether the writer waits for room, so its doorbell must be
  // rung (once: this clears its word).
  bool writer_needs_doorbell();
  // The writer wrote its last byte (read what is left first: readable()).
  bool writer_closed() const;

 private:
  const std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::uint64_t read_ = 0;  // ours, kept here
  ShmRingControl control_;
};

}  // namespace volley::wire
