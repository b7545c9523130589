#include <volley/net/udp_drops.hpp>

#include <sys/stat.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace volley::net {

std::optional<std::uint64_t> udp_receive_drops(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return std::nullopt;
  const std::string inode = std::to_string(st.st_ino);
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
      std::uint64_t drops = 0;
      if (n == 13 && field[9] == inode &&
          std::from_chars(field[12].data(), field[12].data() + field[12].size(), drops).ec == std::errc{})
        return drops;
    }
  }
  return std::nullopt;
}

}  // namespace volley::net
