// Says whether this process may use io_uring: the kernel may have it turned
// off (kernel.io_uring_disabled) or a container's seccomp profile may forbid
// it. The io_uring test stage runs only where this exits 0.
#include <cstdio>
#include <cstring>

#include <liburing.h>

int main() {
  io_uring ring{};
  const int rc = io_uring_queue_init(8, &ring, 0);
  if (rc < 0) {
    std::fprintf(stderr, "io_uring is not available to this process: %s\n", std::strerror(-rc));
    return 1;
  }
  io_uring_queue_exit(&ring);
  std::puts("io_uring is available");
  return 0;
}
