#include <volley/netem/relay_core.hpp>

#include <algorithm>

namespace volley::netem {

namespace {
// The down direction gets its own stream of randomness from the same seed.
constexpr std::uint64_t kDownSeedOffset = 0x9E3779B97F4A7C15ull;
}  // namespace

RelayCore::RelayCore(const boost::asio::any_io_executor& executor, const Impairment& up, const Impairment& down,
                     std::uint64_t seed, Sink up_sink, Sink down_sink)
    : up_(up, seed),
      down_(down, seed + kDownSeedOffset),
      up_sink_(std::move(up_sink)),
      down_sink_(std::move(down_sink)),
      timer_(executor),
      origin_(std::chrono::steady_clock::now()) {}

Nanos RelayCore::now() const {
  return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now() - origin_);
}

void RelayCore::submit(LinkModel& link, std::vector<std::byte> bytes, std::uint64_t tag) {
  if (stopped_) return;
  if (observer_) {
    const std::vector<std::byte> seen = bytes;  // only when observed: the link may corrupt its copy
    const Admission admission = link.submit(now(), std::move(bytes), tag);
    observer_(&link == &up_, seen, tag, admission);
  } else {
    link.submit(now(), std::move(bytes), tag);
  }
  // Undelayed packets leave at once, without a trip through the timer.
  release();
}

void RelayCore::release() {
  const Nanos t = now();
  Departure d;
  while (up_.take_due(t, d)) up_sink_(d);
  while (down_.take_due(t, d)) down_sink_(d);
  arm();
}

void RelayCore::arm() {
  std::optional<Nanos> next = up_.next_departure();
  if (const auto dn = down_.next_departure(); dn && (!next || *dn < *next)) next = dn;
  if (!next || stopped_) return;
  const auto when = origin_ + *next;
  if (armed_ && armed_for_ <= when) return;  // an earlier wake-up is already set
  armed_ = true;
  armed_for_ = when;
  timer_.expires_at(when);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // re-armed earlier, or stopped
    armed_ = false;
    release();
  });
}

void RelayCore::stop() {
  stopped_ = true;
  timer_.cancel();
}

}  // namespace volley::netem
