#pragma once
// Starts `volley target` on a free loopback port and collects its JSON report.
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "child_process.hpp"

namespace volley::test {

class RunningTarget {
 public:
  RunningTarget(const TempDir& dir, std::vector<std::string> extra_args) : dir_(dir) {
    std::vector<std::string> argv{bin("volley"), "target", "--bind", "127.0.0.1", "--port", "0", "--json",
                                  "--no-progress", "--port-file", dir.file("target.port")};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    process_ = std::make_unique<ChildProcess>(argv, dir.file("target"));
    for (int i = 0; i < 1000 && port_ == 0; ++i) {  // up to 10 s, for sanitizer builds
      const std::string text = read_file(dir.file("target.port"));
      if (!text.empty()) port_ = std::stoi(text);
      else std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (process_->wait_for(std::chrono::milliseconds(0))) break;
    }
    if (port_ == 0) ADD_FAILURE() << "target did not start: " << process_->stderr_text();
  }

  int port() const { return port_; }
  ChildProcess& process() { return *process_; }

  // SIGTERM, wait for the graceful exit, and parse the report.
  boost::json::object stop() {
    process_->send_signal(SIGTERM);
    const auto code = process_->wait_for(std::chrono::seconds(20));
    EXPECT_TRUE(code.has_value()) << "target did not exit after SIGTERM";
    EXPECT_EQ(code.value_or(-1), 0) << process_->stderr_text();
    return boost::json::parse(report_text(process_->stdout_text())).as_object();
  }

 private:
  const TempDir& dir_;
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
};

inline std::uint64_t u64(const boost::json::value& v) { return boost::json::value_to<std::uint64_t>(v); }

}  // namespace volley::test
