#include "child_processes.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/core.h>

extern char** environ;

namespace volley::tools {

using namespace std::chrono_literals;

std::string self_executable() { return std::filesystem::canonical("/proc/self/exe").string(); }

Child::Child(const std::vector<std::string>& argv, const std::string& stdout_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const std::string err = stdout_path + ".err";
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
}

Child::~Child() {
  if (running()) terminate();
}

bool Child::running() {
  if (status_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return true;
}

std::optional<int> Child::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      terminate();
      return std::nullopt;
    }
    std::this_thread::sleep_for(10ms);
  }
  return status_;
}

void Child::terminate() {
  if (!running()) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 200 && running(); ++i) std::this_thread::sleep_for(10ms);
  if (running()) ::kill(pid_, SIGKILL);
  int status = 0;
  if (!status_ && ::waitpid(pid_, &status, 0) == pid_) status_ = 128 + SIGKILL;
}

std::string wait_for_file(const std::string& path, Child& child, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline && child.running()) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (!text.str().empty()) return text.str();
    std::this_thread::sleep_for(10ms);
  }
  return {};
}

namespace {

// `ip` commands with arguments this file made (no user text reaches a shell).
bool ip(const std::string& arguments) {
  return std::system(("ip " + arguments + " >/dev/null 2>&1").c_str()) == 0;
}

}  // namespace

std::string NamespaceLink::unavailable_reason() {
  struct stat st {};
  if (::geteuid() != 0) return "it needs root (network namespaces and TUN devices)";
  if (::stat("/dev/net/tun", &st) != 0) return "/dev/net/tun is missing: this kernel or container has no TUN support";
  if (std::system("ip -V >/dev/null 2>&1") != 0) return "the ip command (iproute2) is missing";
  return {};
}

void NamespaceLink::remove_stale(const std::string& prefix) {
  FILE* list = ::popen("ip netns list 2>/dev/null", "r");
  if (list == nullptr) return;
  std::vector<std::string> stale;
  char line[256];
  while (std::fgets(line, sizeof line, list) != nullptr) {
    const std::string name = std::string(line).substr(0, std::strcspn(line, " \n"));
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string digits = name.substr(prefix.size(), name.find('-') - prefix.size());
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(static_cast<pid_t>(std::stol(digits)), 0) != 0 && errno == ESRCH) stale.push_back(name);
  }
  ::pclose(list);
  for (const auto& name : stale) ip("netns del " + name);  // its TUN device went with its relay process
}

NamespaceLink::NamespaceLink(const std::string& name, const std::string& netem, std::uint64_t seed,
                             const std::string& work_dir)
    : ns_a_(name + "-a"), ns_b_(name + "-b") {
  // Interface names have 15 characters at most.
  const std::string tag = fmt::format("{:08x}", static_cast<std::uint32_t>(std::hash<std::string>{}(name)));
  dev_a_ = "vn" + tag + "a";
  dev_b_ = "vn" + tag + "b";
  teardown();  // leftovers of an earlier run under the same name
  const std::string ready = work_dir + "/" + name + ".link-ready";
  std::filesystem::remove(ready);
  const auto fail = [&](const std::string& what) {
    teardown();
    throw std::runtime_error("network namespace link: " + what);
  };
  if (!ip("netns add " + ns_a_) || !ip("netns add " + ns_b_)) fail("cannot create the namespaces");
  relay_.emplace(std::vector<std::string>{self_executable(), "netem", "tun", "--dev-a", dev_a_, "--dev-b", dev_b_,
                                          "--up", netem, "--down", netem, "--seed", std::to_string(seed),
                                          "--no-progress", "--json", "--ready-file", ready},
                 work_dir + "/" + name + ".link.json");
  if (wait_for_file(ready, *relay_, 10s).empty()) fail("volley netem tun did not start (see " + name + ".link.json.err)");
  for (const auto& [dev, ns, local, peer] :
       {std::tuple{dev_a_, ns_a_, kAddressA, kAddressB}, std::tuple{dev_b_, ns_b_, kAddressB, kAddressA}}) {
    if (!ip("link set " + dev + " netns " + ns) || !ip("-n " + ns + " link set lo up") ||
        !ip(fmt::format("-n {} addr add {}/32 peer {} dev {}", ns, local, peer, dev)) ||
        !ip("-n " + ns + " link set " + dev + " up"))
      fail("cannot configure " + dev + " in " + ns);
  }
}

NamespaceLink::~NamespaceLink() { teardown(); }

void NamespaceLink::teardown() {
  if (relay_) relay_->terminate();
  relay_.reset();
  ip("netns del " + ns_a_);
  ip("netns del " + ns_b_);
  ip("link del " + dev_a_);
  ip("link del " + dev_b_);
}

std::vector<std::string> NamespaceLink::in(const std::string& ns, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"ip", "netns", "exec", ns});
  return argv;
}

}  // namespace volley::tools
