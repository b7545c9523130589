#pragma once
// `volley echo-server` and `volley echo-client` as processes on loopback: the
// server on a free port with its JSON report, a client run with its report,
// and the checks every clean run must pass.
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "child_process.hpp"
#include "listening_server.hpp"

namespace volley::test {

// `volley echo-server` on a free loopback port.
class EchoServer : public ListeningServer {
 public:
  EchoServer(const TempDir& dir, std::vector<std::string> args, const std::string& name = "echo-server")
      : ListeningServer(dir, with(std::move(args)), name) {}
  std::string log() { return process().stderr_text(); }

 private:
  static std::vector<std::string> with(std::vector<std::string> extra) {
    std::vector<std::string> argv{"echo-server", "-p", "0", "--json", "--no-progress"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
};

struct ClientRun {
  int exit_code = -1;
  boost::json::object report;
  std::string log;
};

inline ClientRun run_client(const TempDir& dir, int port, std::vector<std::string> args) {
  std::vector<std::string> argv{bin("volley"), "echo-client", "-p", std::to_string(port), "--json", "--no-progress"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess client(argv, dir.file("echo-client"));
  ClientRun r;
  r.exit_code = client.wait_for(std::chrono::seconds(120)).value_or(-1);
  r.log = client.stderr_text();
  const std::string text = client.stdout_text();
  if (text.find('{') != std::string::npos) r.report = boost::json::parse(text).as_object();
  return r;
}

inline std::string make_certs(const TempDir& dir) {
  ChildProcess p({std::string(VOLLEY_SOURCE_DIR) + "/scripts/make-test-certs.sh", dir.file("certs")}, dir.file("certs-log"));
  EXPECT_EQ(p.wait_for(std::chrono::seconds(60)).value_or(-1), 0) << p.stderr_text();
  return dir.file("certs");
}

inline void expect_clean_run(const ClientRun& r, std::size_t size) {
  ASSERT_EQ(r.exit_code, 0) << r.log;
  EXPECT_EQ(json_u64(r.report, "errors"), 0u) << r.log;
  EXPECT_EQ(json_u64(r.report, "mismatched_bytes"), 0u);
  const std::uint64_t bytes = json_u64(r.report, "total_bytes");
  EXPECT_GT(bytes, 0u);
  EXPECT_EQ(bytes, json_u64(r.report, "bytes_sent"));  // every byte sent came back
  EXPECT_EQ(json_u64(r.report, "total_messages") * size, bytes);
}

}  // namespace volley::test
