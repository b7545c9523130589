#pragma once
// Child processes for the benchmarks that run tools as separate programs (each
// SCTP end needs a process of its own; the TCP baseline runs in network
// namespaces), and the two-namespace link through `volley netem tun` that the
// TCP baseline crosses.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace volley::tools {

// This executable's path, to run its own subcommands.
std::string self_executable();

class Child {
 public:
  // Starts argv[0] with stdout to `stdout_path` and stderr to `stdout_path` + ".err".
  Child(const std::vector<std::string>& argv, const std::string& stdout_path);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The exit code, or nothing if it is still running after `timeout` (then it is killed).
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  void terminate();  // SIGTERM, then SIGKILL if it lingers
  bool running();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Waits for a file a child writes once ready (a port file): its text, or empty
// if the child exited or the time ran out first.
std::string wait_for_file(const std::string& path, Child& child, std::chrono::milliseconds timeout);

// Two network namespaces, NAME-a (198.18.0.1) and NAME-b (198.18.0.2), joined by
// a TUN pair whose traffic `volley netem tun` impairs both ways alike. Needs root
// and /dev/net/tun; everything is removed again on destruction.
class NamespaceLink {
 public:
  NamespaceLink(const std::string& name, const std::string& netem, std::uint64_t seed, const std::string& work_dir);
  ~NamespaceLink();
  NamespaceLink(const NamespaceLink&) = delete;
  NamespaceLink& operator=(const NamespaceLink&) = delete;

  static std::string unavailable_reason();  // empty when the machine allows it
  // Deletes namespaces named PREFIX<pid>-... whose process is gone (a run that
  // was killed cannot clean up after itself).
  static void remove_stale(const std::string& prefix);
  // The command line that runs argv inside namespace a or b.
  std::vector<std::string> in_a(std::vector<std::string> argv) const { return in(ns_a_, std::move(argv)); }
  std::vector<std::string> in_b(std::vector<std::string> argv) const { return in(ns_b_, std::move(argv)); }
  static constexpr const char* kAddressA = "198.18.0.1";
  static constexpr const char* kAddressB = "198.18.0.2";

 private:
  static std::vector<std::string> in(const std::string& ns, std::vector<std::string> argv);
  void teardown();

  std::string ns_a_, ns_b_, dev_a_, dev_b_;
  std::optional<Child> relay_;
};

}  // namespace volley::tools
