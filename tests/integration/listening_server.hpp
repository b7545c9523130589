#pragma once
// Starts a server tool that prints "listening ... ADDRESS:PORT" as its first
// line on stdout (pingpong-server, echo-server), and collects the JSON report
// it prints after SIGTERM.
#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "child_process.hpp"

namespace volley::test {

class ListeningServer {
 public:
  // `argv` without the program: {"pingpong-server", "-p", "0", ...}; `name` names its output files.
  ListeningServer(const TempDir& dir, std::vector<std::string> argv, const std::string& name) {
    argv.insert(argv.begin(), bin("volley"));
    process_ = std::make_unique<ChildProcess>(argv, dir.file(name));
    for (int i = 0; i < 1000 && !started_; ++i) {  // up to 10 s, for sanitizer builds
      const std::string text = process_->stdout_text();
      const auto eol = text.find('\n');
      const auto colon = text.rfind(':', eol);
      const auto where = text.find(' ', 10);  // "listening PROTO WHERE"
      if (text.rfind("listening ", 0) == 0 && eol != std::string::npos && where < eol &&
          text.compare(where + 1, 4, "unix") == 0) {
        unix_address_ = text.substr(where + 1, eol - where - 1);
        started_ = true;
      } else if (text.rfind("listening ", 0) == 0 && eol != std::string::npos && colon != std::string::npos) {
        port_ = std::stoi(text.substr(colon + 1, eol - colon - 1));
        started_ = port_ != 0;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (process_->wait_for(std::chrono::milliseconds(0))) break;
      }
    }
    if (!started_) ADD_FAILURE() << name << " did not start: " << process_->stderr_text();
  }

  // The TCP port; 0 for a server on a Unix socket.
  int port() const { return port_; }
  // The Unix socket's address, empty for a server on TCP.
  const std::string& unix_address() const { return unix_address_; }
  ChildProcess& process() { return *process_; }
  bool running() { return !process_->wait_for(std::chrono::milliseconds(0)).has_value(); }

  // SIGTERM, wait for the graceful exit, and parse the report (after the "listening" line).
  boost::json::object stop() {
    process_->send_signal(SIGTERM);
    return report();
  }
  // Waits for the exit (a signal sent already: a drain ends by itself) and parses the report.
  boost::json::object report() {
    const auto code = process_->wait_for(std::chrono::seconds(20));
    EXPECT_EQ(code.value_or(-1), 0) << process_->stderr_text();
    const std::string text = process_->stdout_text();
    const auto brace = text.find('{');
    if (brace == std::string::npos) {
      ADD_FAILURE() << "no report: " << text;
      return {};
    }
    return boost::json::parse(text.substr(brace)).as_object();
  }

 private:
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
  std::string unix_address_;
  bool started_ = false;
};

// `volley pingpong-server` on loopback; port 0: any free port.
class RunningPingPongServer : public ListeningServer {
 public:
  RunningPingPongServer(const TempDir& dir, std::vector<std::string> extra_args, int port = 0,
                        const std::string& name = "pingpong-server")
      : ListeningServer(dir, with(std::move(extra_args), port), name) {}

 private:
  static std::vector<std::string> with(std::vector<std::string> extra, int port) {
    std::vector<std::string> argv{"pingpong-server", "-p", std::to_string(port), "--json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
};

// "127.0.0.1:PORT": a loopback server as a client's list of servers names it.
inline std::string loopback_address(int port) { return "127.0.0.1:" + std::to_string(port); }

// volley rpc-server's ping: Ping (id 1) answered with Pong (id 2).
inline constexpr std::uint32_t kRpcServerPing = 1, kRpcServerPong = 2;

inline std::uint64_t json_u64(const boost::json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v ? boost::json::value_to<std::uint64_t>(*v) : ~std::uint64_t{0};
}

}  // namespace volley::test
