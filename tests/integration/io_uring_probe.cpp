// Says whether this process may use io_uring: the kernel may have it turned
// off (kernel.io_uring_disabled) or a container's seccomp profile may forbid
// it. The io_uring test stage runs only where this exits 0. Built only with
// VOLLEY_IO_URING, so the library's own check is the io_uring one.
#include <cstdio>

#include <volley/net/io_backend.hpp>

int main() {
  if (const std::string problem = volley::net::io_backend_problem(); !problem.empty()) {
    std::fprintf(stderr, "%s\n", problem.c_str());
    return 1;
  }
  std::printf("%s is available\n", volley::net::io_backend());
  return 0;
}
