#include <volley/net/udp_drops.hpp>

#include <sys/stat.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace volley::net {

namespace {

std::optional<std::uint64_t> inode_of(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_ino);
}

// Calls found(inode, drops) for each socket line of the UDP tables until it returns true.
template <class Found>
void scan_udp_tables(Found found) {
  for (const char* table : {"/proc/self/net/udp", "/proc/self/net/udp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
      std::istringstream fields(line);
      std::string field[13];
      int n = 0;
      while (n < 13 && fields >> field[n]) ++n;
      std::uint64_t inode = 0, drops = 0;
      if (n == 13 && std::from_chars(field[9].data(), field[9].data() + field[9].size(), inode).ec == std::errc{} &&
          std::from_chars(field[12].data(), field[12].data() + field[12].size(), drops).ec == std::errc{} &&
          found(inode, drops))
        return;
    }
  }
}

}  // namespace

std::optional<std::uint64_t> udp_receive_drops(int fd) {
  const auto inode = inode_of(fd);
  if (!inode) return std::nullopt;
  std::optional<std::uint64_t> result;
  scan_udp_tables([&](std::uint64_t i, std::uint64_t drops) {
    if (i != *inode) return false;
    result = drops;
    return true;
  });
  return result;
}

UdpDropTable UdpDropTable::read() {
  UdpDropTable t;
  scan_udp_tables([&](std::uint64_t inode, std::uint64_t drops) {
    t.by_inode_.emplace(inode, drops);
    return false;
  });
  return t;
}

std::optional<std::uint64_t> UdpDropTable::drops_of(int fd) const {
  const auto inode = inode_of(fd);
  if (!inode) return std::nullopt;
  const auto it = by_inode_.find(*inode);
  if (it == by_inode_.end()) return std::nullopt;
  return it->second;
}

}  // namespace volley::net
