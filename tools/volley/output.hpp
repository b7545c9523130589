#pragma once
// What the programs print on stdout and stderr (reports, progress lines).
// Output never ends a program: its reader may be gone (`volley target | head
// -1`), and then what it prints is dropped. run_command() ignores SIGPIPE, so
// such a write fails with EPIPE instead of killing the process, and fmt's
// exception for it is swallowed here; the program goes on serving, and
// reports its exit as usual.
#include <cstdio>
#include <system_error>
#include <utility>

#include <fmt/core.h>

namespace volley::tools {

template <typename... Args>
void print(std::FILE* to, fmt::format_string<Args...> format, Args&&... args) {
  try {
    fmt::print(to, format, std::forward<Args>(args)...);
  } catch (const std::system_error&) {
    // the reader has gone: nothing to tell it
  }
}

template <typename... Args>
void print(fmt::format_string<Args...> format, Args&&... args) {
  tools::print(stdout, format, std::forward<Args>(args)...);
}

}  // namespace volley::tools
