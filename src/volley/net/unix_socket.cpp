#include <volley/net/unix_socket.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

namespace volley::net {

namespace {

constexpr std::string_view kPathPrefix = "unix:";
constexpr std::string_view kAbstractPrefix = "unix-abstract:";

std::error_code last_error() { return {errno, std::system_category()}; }

// The sockaddr for `address`, its length in `length`; false (`ec` set) when the name does not fit.
bool to_sockaddr(const UnixAddress& address, sockaddr_un& sa, socklen_t& length, std::error_code& ec) {
  ec.clear();
  sa = {};
  sa.sun_family = AF_UNIX;
  const std::size_t room = sizeof sa.sun_path - (address.abstract ? 1 : 0) - 1;  // a path keeps its NUL
  if (address.name.empty() || address.name.size() > room) {
    ec = std::make_error_code(address.name.empty() ? std::errc::invalid_argument : std::errc::filename_too_long);
    return false;
  }
  char* at = sa.sun_path + (address.abstract ? 1 : 0);  // abstract: a leading NUL, then the name
  std::memcpy(at, address.name.data(), address.name.size());
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + (address.abstract ? 1 : 0) + address.name.size() +
                                  (address.abstract ? 0 : 1));
  return true;
}

int make_socket(std::error_code& ec) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) ec = last_error();
  return fd;
}

// Whether a server accepts on the socket file at `sa`: a connect that
// succeeds (or is only waiting for a full backlog) says so; one refused says
// the file is left over.
bool someone_listens(const sockaddr_un& sa, socklen_t length) {
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (probe < 0) return true;  // cannot tell: leave the file alone
  const int rc = ::connect(probe, reinterpret_cast<const sockaddr*>(&sa), length);
  const int error = errno;
  ::close(probe);
  return rc == 0 || error == EAGAIN || error == EINPROGRESS;
}

}  // namespace

std::optional<UnixAddress> parse_unix_address(std::string_view text) {
  if (text.starts_with(kAbstractPrefix)) return UnixAddress{std::string(text.substr(kAbstractPrefix.size())), true};
  if (text.starts_with(kPathPrefix)) return UnixAddress{std::string(text.substr(kPathPrefix.size())), false};
  return std::nullopt;
}

int listen_unix(const UnixAddress& address, int mode, UnixSocketFile& file, std::error_code& ec) {
  sockaddr_un sa;
  socklen_t length = 0;
  if (!to_sockaddr(address, sa, length, ec)) return -1;
  if (!address.abstract) {
    struct stat st{};
    if (::lstat(address.name.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        ec = std::make_error_code(std::errc::file_exists);
        return -1;
      }
      if (someone_listens(sa, length)) {
        ec = std::make_error_code(std::errc::address_in_use);
        return -1;
      }
      if (::unlink(address.name.c_str()) != 0 && errno != ENOENT) {
        ec = last_error();
        return -1;
      }
    }
  }
  const int fd = make_socket(ec);
  if (fd < 0) return -1;
  struct stat made{};
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&sa), length) == 0 &&
                  (address.abstract || ::lstat(address.name.c_str(), &made) == 0) &&
                  (address.abstract || mode < 0 || ::chmod(address.name.c_str(), static_cast<mode_t>(mode)) == 0) &&
                  ::listen(fd, SOMAXCONN) == 0;
  if (!ok) {
    ec = last_error();
    const bool bound = ec != std::errc::address_in_use && !address.abstract;
    ::close(fd);
    if (bound) ::unlink(address.name.c_str());
    return -1;
  }
  file = {made.st_dev, made.st_ino};
  return fd;
}

void remove_unix_socket_file(const UnixAddress& address, const UnixSocketFile& file) {
  if (address.abstract) return;
  struct stat there{};
  if (::lstat(address.name.c_str(), &there) != 0) return;
  if (there.st_dev == file.device && there.st_ino == file.inode) ::unlink(address.name.c_str());
}

int connect_unix(const UnixAddress& address, std::error_code& ec) {
  sockaddr_un sa;
  socklen_t length = 0;
  if (!to_sockaddr(address, sa, length, ec)) return -1;
  const int fd = make_socket(ec);
  if (fd < 0) return -1;
  // A Unix connect completes at once, or says EAGAIN when the server's backlog is full.
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&sa), length) != 0) {
    ec = last_error();
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string describe_unix_peer(int fd) {
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0 || local.ss_family != AF_UNIX) return {};
  ucred cred{};
  socklen_t cred_length = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_length) != 0) return "unix peer";
  return fmt::format("unix peer pid {} uid {}", cred.pid, cred.uid);
}

}  // namespace volley::net
