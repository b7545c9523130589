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

}  // namespace volley::net
