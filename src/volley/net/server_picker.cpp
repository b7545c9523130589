#include <volley/net/server_picker.hpp>

#include <algorithm>

namespace volley::net {

const char* to_string(ServerPolicy policy) noexcept {
  switch (policy) {
    case ServerPolicy::first: return "first";
    case ServerPolicy::round_robin: return "round-robin";
  }
  return "?";
}

bool parse_server_policy(std::string_view text, ServerPolicy& policy) noexcept {
  if (text == "first") {
    policy = ServerPolicy::first;
  } else if (text == "round-robin") {
    policy = ServerPolicy::round_robin;
  } else {
    return false;
  }
  return true;
}

ServerPicker::ServerPicker(std::size_t servers, ServerPolicy policy, const BackoffOptions& backoff, std::uint64_t start)
    : policy_(policy), servers_(std::max<std::size_t>(servers, 1), Server(backoff)), round_backoff_(backoff) {
  if (policy_ == ServerPolicy::round_robin) cursor_ = static_cast<std::size_t>(start % servers_.size());
}

ServerPicker::Next ServerPicker::after_failed_attempt(std::size_t server, Clock::time_point now, double draw) {
  if (policy_ == ServerPolicy::first) {
    if (++failed_in_row_ < servers_.size()) return {(server + 1) % servers_.size(), {}};
    failed_in_row_ = 0;
    return {0, round_backoff_.next(draw)};
  }
  Server& s = servers_[server % servers_.size()];
  s.ready_at = now + s.backoff.next(draw);
  return next_ready_after(server, now);
}

void ServerPicker::opened(std::size_t server) {
  Server& s = servers_[server % servers_.size()];
  s.backoff.reset();
  s.ready_at = {};
  round_backoff_.reset();
  failed_in_row_ = 0;
}

ServerPicker::Next ServerPicker::after_lost_connection(std::size_t server, Clock::time_point now, double draw) {
  // A short pause all the same (the backoff's first step, after an open):
  // a server that accepts and drops at once is not hammered.
  const std::chrono::milliseconds pause = round_backoff_.next(draw);
  if (policy_ == ServerPolicy::first) {
    failed_in_row_ = 0;
    return {0, pause};
  }
  Next next = next_ready_after(server, now);
  next.delay = std::max(next.delay, pause);
  return next;
}

ServerPicker::Next ServerPicker::after_goodbye(std::size_t server, Clock::time_point now) {
  if (policy_ == ServerPolicy::first) {
    failed_in_row_ = 0;
    return {0, {}};
  }
  return next_ready_after(server, now);
}

ServerPicker::Next ServerPicker::next_ready_after(std::size_t from, Clock::time_point now) const {
  const std::size_t n = servers_.size();
  std::size_t soonest = (from + 1) % n;
  for (std::size_t k = 1; k <= n; ++k) {
    const std::size_t i = (from + k) % n;
    if (servers_[i].ready_at <= now) return {i, {}};
    if (servers_[i].ready_at < servers_[soonest].ready_at) soonest = i;
  }
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(servers_[soonest].ready_at - now);
  return {soonest, wait};
}

}  // namespace volley::net
