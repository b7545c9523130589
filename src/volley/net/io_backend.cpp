#include <volley/net/io_backend.hpp>

#include <cstring>

#include <boost/asio/detail/config.hpp>
#include <fmt/format.h>

#include "uring_receive.hpp"

#if defined(BOOST_ASIO_HAS_IO_URING)
#include <liburing.h>
#endif

namespace volley::net {

const char* io_backend() noexcept {
#if defined(BOOST_ASIO_HAS_IO_URING) && defined(BOOST_ASIO_DISABLE_EPOLL)
  return "io_uring";
#else
  return "epoll";
#endif
}

std::string io_backend_problem() {
#if defined(BOOST_ASIO_HAS_IO_URING)
  // The same call Asio's io_context makes first.
  io_uring ring{};
  if (const int rc = io_uring_queue_init(8, &ring, 0); rc < 0) {
    return fmt::format(
        "this build of Volley runs on Asio's io_uring backend (VOLLEY_IO_URING=ON), and this process may not use "
        "io_uring: {} (the kernel may have it turned off, kernel.io_uring_disabled, or a container's seccomp profile "
        "may forbid it); use a build configured with -DVOLLEY_IO_URING=OFF, which runs on epoll",
        std::strerror(-rc));
  }
  io_uring_queue_exit(&ring);
#endif
  return {};
}

const char* to_string(ReceivePath path) noexcept { return path == ReceivePath::io_uring ? "io_uring" : "reactor"; }

std::string io_uring_receive_problem() { return detail::UringReceiver::problem(); }

}  // namespace volley::net
