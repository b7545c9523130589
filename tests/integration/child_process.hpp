#pragma once
// Runs a program of the build as a child process for integration tests: output
// goes to files in a private temporary folder, every wait has a deadline, and
// the destructor kills what is still running so a failed test leaves nothing.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace volley::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class ChildProcess {
 public:
  // argv[0] is a path; output goes to `out_prefix`.stdout / .stderr, or, with
  // `output_fd` (a pipe's writing end, say), stdout and stderr both go there.
  ChildProcess(const std::vector<std::string>& argv, const std::string& out_prefix, int output_fd = -1);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  void send_signal(int signo) const;
  // The exit code (128 + signal when killed by one), or nullopt when still running at the deadline.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  std::string stdout_text() const;
  std::string stderr_text() const;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string out_prefix_;
};

std::string read_file(const std::string& path);

// Tests that starve a child of file descriptors (prlimit) run in the Release
// build only: UBSan checks the target of a virtual call by probing memory
// through a pipe, and with no descriptor left for the pipe it reports a valid
// object as having an invalid vptr ("memory cannot be printed"), a false alarm
// of the runtime, not of the code (seen with the echo server; a suppression
// file is not read either, for the same want of a descriptor).
#ifdef VOLLEY_SANITIZER_BUILD
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif
// Either sanitizer's runtime (ASan+UBSan or ThreadSanitizer) slows the
// programs under test: where a test bounds a time, these builds get more.
#if defined(VOLLEY_SANITIZER_BUILD) || defined(VOLLEY_TSAN_BUILD)
inline constexpr bool kSlowedBySanitizer = true;
#else
inline constexpr bool kSlowedBySanitizer = false;
#endif
inline constexpr const char* kDescriptorStarvationUnderSanitizers =
    "skipped under sanitizers: their runtime needs descriptors of its own (see child_process.hpp)";
// The port a server program wrote to its --port-file: polled for up to 10 s
// (sanitizer builds start slowly), 0 if it never came or the program exited.
int wait_for_port_file(const std::string& path, ChildProcess& program);
// A server program's JSON report: its stdout from the first line that opens
// a JSON object (after the "listening ..." line every server prints first).
std::string report_text(const std::string& stdout_text);
// The path of a program of this build (build/bin/NAME).
std::string bin(const std::string& name);
// A process's resident memory (VmRSS) in KiB; 0 once it is gone.
std::uint64_t resident_kib(pid_t pid);

}  // namespace volley::test
