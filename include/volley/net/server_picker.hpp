#pragma once
// Which of several servers a reconnecting client tries next, and when. Pure:
// the caller passes the time and the random draws, so tests know every step.
//
// - first: the servers in order. A failed attempt moves on to the next one
//   at once; after a whole round of failures, the backoff, then the first
//   again. A lost connection starts again from the first (after the
//   backoff's first step), so clients go back to the preferred server.
// - round_robin: each attempt goes to the server after the last one tried,
//   from a starting point the caller gives (clients given 0, 1, 2, ...
//   spread evenly). A server whose
//   attempt failed is skipped until its own backoff passes; when every
//   server is in its backoff, the wait is for the first one out of it.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <volley/net/backoff.hpp>

namespace volley::net {

enum class ServerPolicy { first, round_robin };
const char* to_string(ServerPolicy policy) noexcept;
// "first" or "round-robin"; false for anything else.
bool parse_server_policy(std::string_view text, ServerPolicy& policy) noexcept;

class ServerPicker {
 public:
  using Clock = std::chrono::steady_clock;
  struct Next {
    std::size_t server = 0;
    std::chrono::milliseconds delay{0};  // before the attempt
  };

  // `servers` at least 1; round_robin's first server is `start` % servers.
  ServerPicker(std::size_t servers, ServerPolicy policy, const BackoffOptions& backoff, std::uint64_t start);

  std::size_t servers() const noexcept { return servers_.size(); }
  // The first attempt's server.
  std::size_t first() const noexcept { return cursor_; }
  // The attempt on `server` failed before its connection opened.
  Next after_failed_attempt(std::size_t server, Clock::time_point now, double draw);
  // A connection to `server` opened: its backoff starts afresh.
  void opened(std::size_t server);
  // That open connection was lost.
  Next after_lost_connection(std::size_t server, Clock::time_point now, double draw);
  // The server on that connection said goodbye (it is draining, and has
  // stopped accepting, or hands its port to a new process): an attempt at
  // once, from the first server (first) or on the next ready one (round_robin).
  Next after_goodbye(std::size_t server, Clock::time_point now);

 private:
  struct Server {
    explicit Server(const BackoffOptions& options) : backoff(options) {}
    Backoff backoff;
    Clock::time_point ready_at{};  // round_robin: skipped until then
  };
  // round_robin: the next server after `from` that is out of its backoff at
  // `now`, else the one out of it soonest.
  Next next_ready_after(std::size_t from, Clock::time_point now) const;

  ServerPolicy policy_;
  std::vector<Server> servers_;
  Backoff round_backoff_;          // first: between whole rounds; round_robin: after a lost connection
  std::size_t cursor_ = 0;         // round_robin's starting point
  std::size_t failed_in_row_ = 0;  // first: attempts failed since the last open or round
};

}  // namespace volley::net
