#pragma once
// Shared memory between two processes on one host, under the same
// TcpConnection, handlers, sessions and framings as TCP: a transport on a
// Unix socket connection (unix_socket.hpp) that moves the bytes through two
// rings in memory both processes map (wire/shm_ring.hpp), and keeps the
// socket for the set-up, the doorbells and the end.
//
//   server: ServerOptions{.bind = "unix:/run/svc.sock",
//                         .transport = [] { return make_shm_transport(ShmRole::server); }}
//   client: ReconnectingClientOptions{.host = "unix:/run/svc.sock",
//                         .make_transport = [] { return make_shm_transport(ShmRole::client); }}
//
// - Set-up (the transport's handshake): the client makes the region (a
//   sealed memfd: neither side can shrink it under the other) and a socket
//   pair for the room doorbells, and passes both over the socket (SCM_RIGHTS);
//   the server checks the region's header and size, maps it and answers.
// - Waiting: a sleeping reader asks for a doorbell (a byte on the socket)
//   before it waits; a busy-polling loop spins on the ring and asks for none,
//   so a busy stream makes no system calls at all. A writer whose ring is
//   full waits for a doorbell on the pair, rung when the reader frees room:
//   a full ring is backpressure, like a full socket buffer.
// - The end: a peer that closes marks its ring closed and shuts the socket;
//   one that dies closes the socket (the kernel does), which the survivor
//   reads as the end of the stream once the ring is empty.
// - The peer is untrusted memory: every index is checked (corrupt_ring ends
//   the connection), and bytes are copied out of the ring before anyone parses them.
#include <chrono>
#include <cstddef>
#include <memory>

#include <volley/net/stream_transport.hpp>

namespace volley::net {

enum class ShmRole { client, server };

struct ShmOptions {
  // Each ring's size, the client's choice (a power of two, 4 KiB to 1 GiB):
  // what one side may have written and the other not yet read.
  std::size_t ring_bytes = 1 << 20;
  // On a loop that sleeps: how long a reader that found its ring empty keeps
  // looking before it asks for a doorbell and sleeps. A stream whose next
  // bytes come sooner makes no system call at all (no doorbell, no wake-up);
  // an idle connection costs this much CPU once per silence. The loop does
  // nothing else meanwhile: a loop with many shared-memory connections that
  // each fall quiet often should set 0 (sleep at once) or busy-poll instead.
  std::chrono::nanoseconds spin_before_sleep = std::chrono::microseconds(10);
};

std::unique_ptr<StreamTransport> make_shm_transport(ShmRole role, ShmOptions options = {});

}  // namespace volley::net
