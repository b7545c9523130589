#pragma once
// Shared by the plain-socket baseline programs (no Volley code in them).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>

namespace bench {

inline sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

}  // namespace bench
