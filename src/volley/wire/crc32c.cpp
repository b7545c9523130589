#include <volley/wire/crc32c.hpp>

#include <array>
#include <bit>
#include <cstring>

namespace volley::wire {
namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78u;  // reflected 0x1EDC6F41

// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes.
constexpr std::array<std::array<std::uint32_t, 256>, 8> make_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c & 1u) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  return t;
}

constexpr auto kTables = make_tables();
static_assert(std::endian::native == std::endian::little, "the slicing tables assume a little-endian host");

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(const std::byte* p, std::size_t n,
                                                            std::uint32_t crc) noexcept {
  std::uint64_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = __builtin_ia32_crc32qi(c32, std::to_integer<unsigned char>(*p));
  return ~c32;
}
#endif

}  // namespace

std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc) noexcept {
  const std::byte* p = data.data();
  std::size_t n = data.size();
  std::uint32_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint32_t lo;
    std::uint32_t hi;
    std::memcpy(&lo, p, 4);  // little-endian host assumed by the reflected algorithm
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
        kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
  }
  for (; n > 0; ++p, --n) c = (c >> 8) ^ kTables[0][(c ^ std::to_integer<std::uint32_t>(*p)) & 0xFF];
  return ~c;
}

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) noexcept {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("sse4.2")) return crc32c_sse42(data.data(), data.size(), crc);
#endif
  return crc32c_portable(data, crc);
}

}  // namespace volley::wire
