#pragma once
// Test helpers: WebSocket frames as a peer writes them, byte for byte.
#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <volley/wire/websocket.hpp>

namespace volley::test {

// One frame; masked with `mask` where given (as a client sends).
inline std::vector<std::byte> frame(bool fin, wire::websocket::Opcode op, const std::string& payload,
                                    const std::array<std::byte, 4>* mask) {
  namespace ws = wire::websocket;
  std::vector<std::byte> out(ws::kMaxHeaderSize + payload.size());
  const std::size_t h = ws::encode_header(out.data(), fin, op, payload.size(), mask);
  const auto* p = reinterpret_cast<const std::byte*>(payload.data());
  if (mask != nullptr) {
    ws::mask_copy(p, out.data() + h, payload.size(), *mask, 0);
  } else {
    std::copy(p, p + payload.size(), out.data() + h);
  }
  out.resize(h + payload.size());
  return out;
}

inline std::vector<std::byte> operator+(std::vector<std::byte> a, const std::vector<std::byte>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline constexpr std::array<std::byte, 4> kKey{std::byte{0x37}, std::byte{0xfa}, std::byte{0x21}, std::byte{0x3d}};

}  // namespace volley::test
