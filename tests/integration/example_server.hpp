#pragma once
// An example program from examples/ run as a user runs it, for the tests.
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.hpp"

namespace volley::test {

// An example server: waits for its "listening PROTO ADDRESS:PORT" line.
class ExampleServer {
 public:
  // `args` after the program: a port of 0 (any free one) unless given.
  ExampleServer(const TempDir& dir, const std::string& name, std::vector<std::string> args = {"0"})
      : process_(with_program(bin(name), std::move(args)), dir.file(name)) {
    for (int i = 0; i < 2000 && port_ == 0; ++i) {
      const std::string text = process_.stdout_text();
      const auto eol = text.find('\n');
      if (text.rfind("listening ", 0) == 0 && eol != std::string::npos)
        port_ = std::stoi(text.substr(text.rfind(':', eol) + 1));
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (port_ == 0) ADD_FAILURE() << name << " did not start: " << process_.stderr_text();
  }
  int port() const { return port_; }
  std::string output() const { return process_.stdout_text(); }
  // SIGINT (Ctrl-C), then its exit code and final output.
  std::pair<int, std::string> stop() {
    using namespace std::chrono_literals;
    process_.send_signal(SIGINT);
    const auto code = process_.wait_for(20s);
    return {code.value_or(-1), process_.stdout_text()};
  }

 private:
  static std::vector<std::string> with_program(std::string program, std::vector<std::string> args) {
    args.insert(args.begin(), std::move(program));
    return args;
  }

  ChildProcess process_;
  int port_ = 0;
};

}  // namespace volley::test
