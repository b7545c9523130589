#pragma once
// An echo handler and the client side that checks it: each client sends its
// own byte pattern, and every byte that comes back must be the next one.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <thread>
#include <vector>

#include <volley/net/tcp_connection.hpp>

#include "raw_client.hpp"

namespace volley::test {

// Echoes every byte it reads, `Size` at a time.
template <std::size_t Size>
class ByteEcho final : public net::StreamHandler {
 public:
  std::span<std::byte> read_buffer() override { return buffer_; }
  void on_data(net::TcpConnection& c, std::size_t n) override { c.send(std::span(buffer_).first(n)); }
  void on_close(net::TcpConnection&, const net::CloseReason&) override {}

 private:
  std::array<std::byte, Size> buffer_{};
};

inline std::byte pattern(std::size_t client, std::size_t i) {
  return static_cast<std::byte>((i * 131 + client * 17 + (i >> 12)) & 0xff);
}

inline std::vector<std::byte> patterned(std::size_t client, std::size_t from, std::size_t n) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = pattern(client, from + i);
  return out;
}

// Sends `total` bytes of its pattern in pieces of `piece`, each after the
// echo of the one before, and checks every byte that comes back. Returns the
// bytes echoed correctly, in order.
inline std::size_t round_trips(const RawClient& socket, std::size_t client, std::size_t total, std::size_t piece) {
  std::size_t done = 0;
  while (done < total) {
    const std::size_t n = std::min(piece, total - done);
    socket.send(patterned(client, done, n));
    const auto back = socket.read(n);
    for (std::size_t i = 0; i < back.size(); ++i)
      if (back[i] != pattern(client, done + i)) return done + i;
    if (back.size() != n) return done + back.size();
    done += n;
  }
  return done;
}

// `clients` clients at once, each on a thread of its own, each round_trips()
// `total` bytes in pieces of piece(client); what each got back intact, in order.
template <class Piece>
std::vector<std::size_t> echo_from_clients(std::uint16_t port, std::size_t clients, std::size_t total, Piece piece) {
  std::vector<std::size_t> echoed(clients, 0);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < clients; ++i)
    threads.emplace_back([&, i] {
      RawClient socket(port);
      echoed[i] = round_trips(socket, i, total, piece(i));
    });
  for (auto& t : threads) t.join();
  return echoed;
}

// Reads until `total` bytes of client `client`'s pattern came back, or a wrong byte, or 5 s of nothing.
inline std::size_t read_intact(const RawClient& socket, std::size_t client, std::size_t total) {
  std::size_t intact = 0;
  while (intact < total) {
    const auto back = socket.read_some(64 * 1024);
    if (back.empty()) break;
    for (std::size_t i = 0; i < back.size(); ++i)
      if (back[i] != pattern(client, intact + i)) return intact + i;
    intact += back.size();
  }
  return intact;
}

// Sends `total` bytes of client 0's pattern from a thread of its own, starts
// reading only once `read_when()` returns (the sending goes on, and the
// server's echoes back up, meanwhile), and returns how many came back
// intact, in order. On `socket`, open already (a test may have used it: the
// pattern starts at client 0's offset 0 either way).
template <class ReadWhen>
std::size_t send_all_then_read_late(RawClient& socket, std::size_t total, ReadWhen read_when) {
  std::thread sender([&] {
    constexpr std::size_t kPiece = 256 * 1024;
    try {
      for (std::size_t done = 0; done < total; done += kPiece)
        socket.send(patterned(0, done, std::min(kPiece, total - done)));
    } catch (const std::exception&) {
      // Ended below: the echoes stopped, and the result already says so.
    }
  });
  read_when();
  const std::size_t intact = read_intact(socket, 0, total);
  // A server that stopped echoing may also have stopped reading, with the
  // sender blocked on it: end the socket so that the test fails, not hangs.
  if (intact < total) socket.shutdown_both();
  sender.join();
  return intact;
}

// The same on a new connection to `port`, reading 300 ms after the sending starts.
inline std::size_t send_all_then_read_late(std::uint16_t port, std::size_t total) {
  RawClient socket(port);
  return send_all_then_read_late(socket, total, [] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
}

}  // namespace volley::test
