// Whether this kernel could take TLS records over (its "tls" upper-layer
// protocol), asked once, and the line every TLS program prints about it.
#include <volley/net/tls.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

namespace volley::net {

namespace {

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

// TCP_ULP "tls" on one end of a loopback connection (the option needs an
// established socket; asking for it loads the kernel's module where it is one).
std::string try_tls_upper_layer() {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  std::string error;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || client < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
      ::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    error = std::string("cannot make a loopback connection to ask: ") + std::strerror(errno);
  } else if (::setsockopt(client, IPPROTO_TCP, TCP_ULP, "tls", sizeof "tls") != 0) {
    error = std::string("TCP_ULP \"tls\": ") + std::strerror(errno);
  }
  if (client >= 0) ::close(client);
  if (listener >= 0) ::close(listener);
  return error;
}

KernelTlsProbe run_probe() {
  std::string listed;
  std::ifstream ulp("/proc/sys/net/ipv4/tcp_available_ulp");
  std::getline(ulp, listed);
  if ((" " + listed + " ").find(" tls ") != std::string::npos)
    return {true, "the kernel offers tls (tcp_available_ulp: " + listed + ")"};
  const std::string error = try_tls_upper_layer();
  if (error.empty()) return {true, "the kernel offers tls (its module loaded on request)"};
  return {false, "this kernel has no tls upper-layer protocol (tcp_available_ulp: " +
                     (listed.empty() ? std::string("none listed") : listed) + "; " + error + ")"};
}

}  // namespace

const KernelTlsProbe& probe_kernel_tls() {
  static const KernelTlsProbe probe = run_probe();
  return probe;
}

std::string tls_record_layer_text() {
  const KernelTlsProbe& kernel = probe_kernel_tls();
  return std::string("TLS records in user space by ") + OpenSSL_version(OPENSSL_VERSION) + "; kernel TLS: " +
         (kernel.available ? kernel.detail + ", not used by Volley yet" : kernel.detail);
}

}  // namespace volley::net
