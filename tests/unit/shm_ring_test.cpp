// The shared-memory ring on its own (no processes, no mappings): bytes in
// order across the wrap, room as backpressure, the doorbell words' handshakes,
// and a corrupt peer caught before any out-of-bounds access.
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <volley/wire/error.hpp>
#include <volley/wire/shm_ring.hpp>

namespace volley::wire {
namespace {

constexpr std::size_t kCapacity = shm::kMinCapacity;

struct Region {
  explicit Region(std::size_t capacity = kCapacity) : capacity(capacity), bytes(shm::region_size(capacity) / 8 + 1) {
    shm::format_region(span(), capacity);
  }
  std::span<std::byte> span() { return std::as_writable_bytes(std::span(bytes)).first(shm::region_size(capacity)); }
  std::span<std::byte> ring(int which) { return shm::ring_of(span(), capacity, which); }
  std::size_t capacity;
  std::vector<std::uint64_t> bytes;  // 8-byte aligned, as a mapping is
};

std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span(s)); }

TEST(ShmRing, AFormattedRegionChecksAndAnyDamageToItsHeaderIsCaught) {
  Region region;
  std::error_code ec;
  EXPECT_EQ(shm::check_region(region.span(), ec), kCapacity);
  EXPECT_FALSE(ec);
  EXPECT_EQ(shm::check_region(region.span().first(shm::region_size(kCapacity) - 1), ec), 0u);
  EXPECT_EQ(ec, Errc::corrupt_ring) << "a mapping shorter than the rings it claims";
  for (std::size_t offset : {shm::kMagicOffset, shm::kVersionOffset, shm::kCapacityOffset}) {
    Region damaged;
    damaged.span()[offset] ^= std::byte{0x40};
    EXPECT_EQ(shm::check_region(damaged.span(), ec), 0u) << offset;
    EXPECT_EQ(ec, Errc::corrupt_ring) << offset;
  }
  EXPECT_FALSE(shm::valid_capacity(3 * 4096));
  EXPECT_FALSE(shm::valid_capacity(2048));
  EXPECT_TRUE(shm::valid_capacity(1 << 20));
}

TEST(ShmRing, BytesArriveInOrderAcrossTheWrapAndAFullRingTakesNothing) {
  Region region;
  ShmRingWriter writer(region.ring(0), kCapacity);
  ShmRingReader reader(region.ring(0), kCapacity);
  std::error_code ec;
  std::string sent, got;
  std::vector<std::byte> out(1000);
  for (int i = 0; i < 200; ++i) {  // about 20 times round the ring
    const std::string chunk = std::to_string(i) + std::string(static_cast<std::size_t>(i % 97), 'a' + static_cast<char>(i % 26));
    ASSERT_EQ(writer.write(bytes_of(chunk), ec), chunk.size());
    ASSERT_FALSE(ec);
    sent += chunk;
    const std::size_t n = reader.read(out, ec);
    ASSERT_FALSE(ec);
    got.append(reinterpret_cast<const char*>(out.data()), n);
  }
  while (const std::size_t n = reader.read(out, ec)) got.append(reinterpret_cast<const char*>(out.data()), n);
  EXPECT_EQ(got, sent);

  const std::string big(kCapacity + 100, 'x');
  EXPECT_EQ(writer.write(bytes_of(big), ec), kCapacity) << "only as much as there is room for";
  EXPECT_EQ(writer.write(bytes_of(big), ec), 0u);
  EXPECT_FALSE(ec);
  EXPECT_TRUE(writer.ask_for_room(ec)) << "full: the writer waits";
  EXPECT_EQ(reader.read(out, ec), out.size());
  EXPECT_TRUE(reader.writer_needs_doorbell());
  EXPECT_FALSE(reader.writer_needs_doorbell()) << "rung once";
  EXPECT_EQ(writer.write(bytes_of(big), ec), out.size());
}

// A message built in place: the room is one piece, nothing is seen before
// publish(), only what was committed is, and a message that would wrap (or
// not fit) gets no room, so the caller copies it in instead.
TEST(ShmRing, AMessageBuiltInPlaceIsOnePieceSeenOnlyOncePublished) {
  Region region;
  ShmRingWriter writer(region.ring(0), kCapacity);
  ShmRingReader reader(region.ring(0), kCapacity);
  std::error_code ec;
  std::vector<std::byte> out(kCapacity);
  std::string sent, got;
  for (int i = 0; i < 100; ++i) {  // a few times round the ring
    const std::string message = "message " + std::to_string(i) + std::string(static_cast<std::size_t>(i * 13 % 211), '.');
    const std::size_t at = sent.size() % kCapacity;
    const std::span<std::byte> room = writer.reserve(message.size() + 16, ec);
    ASSERT_FALSE(ec);
    if (at + message.size() + 16 > kCapacity) {
      EXPECT_TRUE(room.empty()) << "room that would wrap is not one piece";
      ASSERT_EQ(writer.copy_in(bytes_of(message), ec), message.size());
    } else {
      ASSERT_EQ(room.size(), message.size() + 16);
      std::memcpy(room.data(), message.data(), message.size());
      writer.commit(message.size());  // 16 bytes spare, given back
    }
    sent += message;
    EXPECT_EQ(reader.readable(ec), 0u) << "nothing seen before publish()";
    writer.publish();
    const std::size_t n = reader.read(out, ec);
    ASSERT_FALSE(ec);
    got.append(reinterpret_cast<const char*>(out.data()), n);
  }
  EXPECT_EQ(got, sent);

  const std::string to_start(kCapacity - sent.size() % kCapacity, 't');  // the next write at the ring's start
  ASSERT_EQ(writer.write(bytes_of(to_start), ec), to_start.size());
  ASSERT_EQ(reader.read(out, ec), to_start.size());
  const std::string fill(kCapacity - 100, 'f');
  ASSERT_EQ(writer.write(bytes_of(fill), ec), fill.size());
  EXPECT_EQ(writer.reserve(100, ec).size(), 100u) << "exactly to the ring's end";
  writer.commit(100);
  writer.publish();
  EXPECT_TRUE(writer.reserve(1, ec).empty()) << "full";
  EXPECT_FALSE(ec);
  EXPECT_EQ(reader.read(out, ec), kCapacity);
  EXPECT_EQ(writer.reserve(kCapacity, ec).size(), kCapacity) << "empty, at the ring's start: all of it";
  EXPECT_TRUE(writer.reserve(kCapacity + 1, ec).empty());
  EXPECT_TRUE(writer.reserve(0, ec).empty());
}

TEST(ShmRing, TheDoorbellIsAskedForOnlyByASleepingReaderAndOnlyWhenNothingWaits) {
  Region region;
  ShmRingWriter writer(region.ring(1), kCapacity);
  ShmRingReader reader(region.ring(1), kCapacity);
  std::error_code ec;
  EXPECT_EQ(writer.write(bytes_of("x"), ec), 1u);
  EXPECT_FALSE(writer.reader_needs_doorbell()) << "a reader that has not said it sleeps is busy-polling";
  EXPECT_FALSE(reader.ask_for_doorbell(ec)) << "a byte waits: read it instead of sleeping";
  std::vector<std::byte> out(8);
  EXPECT_EQ(reader.read(out, ec), 1u);
  EXPECT_TRUE(reader.ask_for_doorbell(ec));
  EXPECT_EQ(writer.write(bytes_of("y"), ec), 1u);
  EXPECT_TRUE(writer.reader_needs_doorbell());
  EXPECT_FALSE(writer.reader_needs_doorbell()) << "one doorbell per sleep";
  reader.awake();
  EXPECT_EQ(reader.read(out, ec), 1u);
  writer.close();
  EXPECT_FALSE(reader.ask_for_doorbell(ec)) << "the writer has closed: no doorbell will come";
  EXPECT_TRUE(reader.writer_closed());
}

// The other side writes its index: whatever it writes, this side reads and
// writes only inside the ring and says corrupt_ring.
TEST(ShmRing, AnImpossiblePeerIndexIsCorruptAndNothingIsReadOrWritten) {
  Region region;
  ShmRingReader reader(region.ring(0), kCapacity);
  ShmRingControl control(region.ring(0));
  std::vector<std::byte> out(64);
  std::error_code ec;
  for (std::uint64_t bad : {std::uint64_t{kCapacity + 1}, ~std::uint64_t{0}, std::uint64_t{1} << 63}) {
    *control.write_index = bad;
    EXPECT_EQ(reader.read(out, ec), 0u) << bad;
    EXPECT_EQ(ec, Errc::corrupt_ring) << bad;
  }
  *control.write_index = 0;

  // The writer looks at the reader's index when the room it knows of is not
  // enough: here, once the ring is full.
  ShmRingWriter writer(region.ring(1), kCapacity);
  ShmRingControl other(region.ring(1));
  const std::string full(kCapacity, 'f');
  ASSERT_EQ(writer.write(bytes_of(full), ec), kCapacity);
  *other.read_index = kCapacity + 5;  // read bytes never written
  EXPECT_EQ(writer.write(bytes_of("hello"), ec), 0u);
  EXPECT_EQ(ec, Errc::corrupt_ring);
  *other.read_index = ~std::uint64_t{0};  // gone back
  EXPECT_EQ(writer.write(bytes_of("hello"), ec), 0u);
  EXPECT_EQ(ec, Errc::corrupt_ring);
}

// One writer thread, one reader thread, doorbells through atomics standing in
// for the socket: every byte arrives in order, and neither side sleeps for
// ever (a lost doorbell would hang this test).
TEST(ShmRing, AWriterAndAReaderOnTwoThreadsNeverLoseADoorbell) {
  Region region;
  ShmRingWriter writer(region.ring(0), kCapacity);
  ShmRingReader reader(region.ring(0), kCapacity);
  std::atomic<int> data_bell{0}, room_bell{0};
  constexpr std::uint64_t kBytes = 8u << 20;
  std::thread producer([&] {
    std::vector<std::byte> chunk(700);
    std::uint64_t next = 0;
    std::error_code ec;
    while (next < kBytes) {
      for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<std::byte>((next + i) * 31 % 251);
      const std::size_t n = writer.write(std::span(chunk).first(static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), kBytes - next))), ec);
      if (ec) return;
      next += n;
      if (n > 0 && writer.reader_needs_doorbell()) data_bell.fetch_add(1);
      if (n == 0 && writer.ask_for_room(ec)) {
        while (room_bell.load() == 0) std::this_thread::yield();
        room_bell.fetch_sub(1);
      }
    }
  });
  std::vector<std::byte> out(1000);
  std::uint64_t got = 0, wrong = 0;
  std::error_code ec;
  while (got < kBytes && !ec) {
    const std::size_t n = reader.read(out, ec);
    for (std::size_t i = 0; i < n; ++i) wrong += out[i] != static_cast<std::byte>((got + i) * 31 % 251);
    got += n;
    if (n > 0 && reader.writer_needs_doorbell()) room_bell.fetch_add(1);
    if (n == 0 && reader.ask_for_doorbell(ec)) {
      while (data_bell.load() == 0) std::this_thread::yield();
      data_bell.fetch_sub(1);
      reader.awake();
    }
  }
  producer.join();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(got, kBytes);
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace volley::wire
