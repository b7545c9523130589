#pragma once
// What every echo client connection shares: the byte pattern it sends (so an
// echo from the wrong offset never compares equal), its counters (written by
// its loop, read by the reporter), and the run's deadline.
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <volley/metrics/counter.hpp>
#include <volley/metrics/histogram.hpp>

namespace volley::tools {

// Stream byte k is pattern[k % kPatternPeriod]; the buffer is long enough to
// hand out any run of up to `window` bytes from any phase without copying.
class EchoPattern {
 public:
  static constexpr std::size_t kPeriod = 251;  // prime: a shifted echo cannot line up with itself
  explicit EchoPattern(std::size_t window) : bytes_(kPeriod + window) {
    for (std::size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = std::byte{static_cast<unsigned char>((i % kPeriod) * 7 + 3)};
  }
  std::span<const std::byte> at(std::uint64_t offset, std::size_t n) const {
    return {bytes_.data() + offset % kPeriod, n};
  }
  bool matches(std::uint64_t offset, std::span<const std::byte> got) const {
    return std::memcmp(got.data(), bytes_.data() + offset % kPeriod, got.size()) == 0;
  }
  std::size_t window() const { return bytes_.size() - kPeriod; }

 private:
  std::vector<std::byte> bytes_;
};

struct EchoRun {
  using Clock = std::chrono::steady_clock;
  std::size_t message_size = 32;
  std::size_t in_flight = 1000;
  bool rtt = false;
  std::chrono::milliseconds loss_timeout{200};  // UDP: a datagram not back by then is lost
  Clock::time_point deadline{};
  std::shared_ptr<const EchoPattern> pattern;
  bool running() const { return Clock::now() < deadline; }
};

struct EchoClientCounters {
  metrics::SingleWriterCounter bytes_sent;
  metrics::SingleWriterCounter bytes_received;
  metrics::SingleWriterCounter messages;
  metrics::SingleWriterCounter errors;
  metrics::SingleWriterCounter mismatched_bytes;
  metrics::SingleWriterCounter lost;  // UDP: datagrams given up on
  metrics::Histogram rtt_ns;          // --rtt; read only after the loops have stopped
  std::string first_error;            // likewise
  EchoRun::Clock::time_point finished{};
};

// What every echo client does with bytes that came back: checks them against
// the pattern at their offset, counts them and the messages they complete,
// and with --rtt times each round trip. `received` and `sent_at` are the
// connection's; returns the messages completed.
inline std::uint64_t take_echo(const EchoRun& run, EchoClientCounters& counters, std::uint64_t& received,
                               EchoRun::Clock::time_point& sent_at, std::span<const std::byte> got) {
  if (!run.pattern->matches(received, got)) counters.mismatched_bytes.add(got.size());
  const std::uint64_t before = received / run.message_size;
  received += got.size();
  counters.bytes_received.add(got.size());
  const std::uint64_t completed = received / run.message_size - before;
  counters.messages.add(completed);
  if (completed > 0 && run.rtt) {
    const auto now = EchoRun::Clock::now();
    counters.rtt_ns.record(
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent_at).count()));
    sent_at = now;
  }
  return completed;
}

}  // namespace volley::tools
