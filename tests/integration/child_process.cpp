#include "child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace volley::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "volley-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& out_prefix, int output_fd)
    : out_prefix_(out_prefix) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string out = out_prefix + ".stdout";
  const std::string err = out_prefix + ".stderr";
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int o = output_fd >= 0 ? output_fd : ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = output_fd >= 0 ? output_fd : ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::dup2(in, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (!exit_code_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

void ChildProcess::send_signal(int signo) const {
  if (!exit_code_) ::kill(pid_, signo);
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string ChildProcess::stdout_text() const { return read_file(out_prefix_ + ".stdout"); }
std::string ChildProcess::stderr_text() const { return read_file(out_prefix_ + ".stderr"); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int wait_for_port_file(const std::string& path, ChildProcess& program) {
  for (int i = 0; i < 1000; ++i) {
    const std::string text = read_file(path);
    if (!text.empty()) return std::stoi(text);
    if (program.wait_for(std::chrono::milliseconds(0))) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

std::string report_text(const std::string& stdout_text) {
  if (stdout_text.rfind('{', 0) == 0) return stdout_text;
  const auto at = stdout_text.find("\n{");
  return at == std::string::npos ? stdout_text : stdout_text.substr(at + 1);
}

std::string bin(const std::string& name) { return std::string(VOLLEY_BIN_DIR) + "/" + name; }

std::uint64_t resident_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

}  // namespace volley::test
