// The backend the library was compiled for is the one a program including its
// headers gets (CMake passes Asio's backend macros on with volley::net), and
// it runs here: this test process runs on it.
#include <gtest/gtest.h>

#include <volley/net/io_backend.hpp>

TEST(IoBackend, IsTheOneTheHeadersAreCompiledForAndRunsHere) {
#if defined(BOOST_ASIO_HAS_IO_URING) && defined(BOOST_ASIO_DISABLE_EPOLL)
  EXPECT_STREQ(volley::net::io_backend(), "io_uring");
#else
  EXPECT_STREQ(volley::net::io_backend(), "epoll");
#endif
  EXPECT_EQ(volley::net::io_backend_problem(), "");
}
