#pragma once
// Runs an io_context on the test's thread until a condition holds or a deadline passes.
#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>

namespace volley::test {

inline bool run_until(boost::asio::io_context& loop, const std::function<bool()>& done,
                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    if (loop.stopped()) loop.restart();
    loop.run_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace volley::test
