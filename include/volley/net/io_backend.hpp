#pragma once
// Which of Asio's backends this build of Volley runs on. Asio chooses it when
// it is compiled (the CMake option VOLLEY_IO_URING), not when it runs, so a
// program cannot switch; what it can do is say clearly, before or after its
// first io_context fails, that the machine forbids the backend it was built
// for (containers often forbid io_uring).
#include <string>

namespace volley::net {

// "epoll" or "io_uring".
const char* io_backend() noexcept;

// Empty where this build's backend can run; otherwise why it cannot, in words
// a user can act on (the kernel's error, and the build to use instead).
std::string io_backend_problem();

// How a plain TCP connection takes its input; unlike the backend, chosen when
// the program runs (ServerOptions::receive, LoopPool).
// - reactor: the loop's reactor (this build's backend) says when the socket
//   is readable, and the connection reads it: a wake-up and a receive system
//   call per message.
// - io_uring: each connection keeps one multishot receive in an io_uring ring
//   of its loop, into buffers the loop provides; one wake-up of the loop hands
//   over what every connection received meanwhile, with no system call per
//   message (the bytes are copied once, into the handler's read buffer).
//   Loops of the loop-per-thread design only, Linux 6.1 or later; TLS and
//   WebSocket connections still read through the reactor.
enum class ReceivePath { reactor, io_uring };
const char* to_string(ReceivePath path) noexcept;  // "reactor", "io_uring"

// Empty where ReceivePath::io_uring can run here; otherwise why not (the
// kernel's version or error, and what to do). Where it cannot, LoopPool logs
// this and receives through the reactor.
std::string io_uring_receive_problem();

}  // namespace volley::net
