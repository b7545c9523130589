#pragma once
// Reading a server program's /metrics from a test: where the endpoint listens,
// the total of a family, and waiting until the program's own counts show that
// something has happened (the way to know that "the traffic is under way",
// where a sleep would only guess).
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "child_process.hpp"
#include "http_client.hpp"

namespace volley::test {

// The port from the program's "metrics http ADDRESS:PORT" line on stdout, 0
// if it never came (10 s) or the program exited first.
inline int metrics_port(ChildProcess& program) {
  using namespace std::chrono_literals;
  for (int i = 0; i < 1000; ++i) {
    const std::string text = program.stdout_text();
    const auto at = text.find("metrics http ");
    const auto eol = at == std::string::npos ? std::string::npos : text.find('\n', at);
    if (eol != std::string::npos) return std::stoi(text.substr(text.rfind(':', eol) + 1));
    if (program.wait_for(0ms)) return 0;
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}

// The sum of every sample of the family `name`, whatever its labels; -1 when
// the exposition has none.
inline double metric_total(const std::string& text, const std::string& name) {
  double total = 0;
  bool found = false;
  for (std::size_t line = 0; line < text.size();) {
    const auto eol = text.find('\n', line);
    const auto end = eol == std::string::npos ? text.size() : eol;
    if (text.compare(line, name.size(), name) == 0 && line + name.size() < end) {
      const char next = text[line + name.size()];
      std::size_t value = std::string::npos;
      if (next == ' ') value = line + name.size() + 1;
      else if (const auto close = text.find("} ", line); next == '{' && close < end) value = close + 2;
      if (value < end) {
        total += std::strtod(text.c_str() + value, nullptr);
        found = true;
      }
    }
    line = end + 1;
  }
  return found ? total : -1;
}

// Scrapes /metrics on `port` until `holds` is true of the family's total, or
// `timeout` passes (false then). Bounded in time; a failed scrape is retried.
inline bool wait_for_metric(int port, const std::string& name, const std::function<bool(double)>& holds,
                            std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    HttpClient scraper(port);
    if (const auto a = scraper.get("/metrics"); a && a->status == 200 && holds(metric_total(a->body, name)))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

}  // namespace volley::test
