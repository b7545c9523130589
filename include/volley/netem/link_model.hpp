#pragma once
// One direction of an impaired link as a state machine: packets go in with
// their arrival time, and the model says which leave when. It owns no socket
// and no clock (time is passed in, in nanoseconds from any fixed origin), and
// its randomness is seeded: the same seed and inputs give the same outputs.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

#include <volley/netem/impairment.hpp>
#include <volley/netem/random.hpp>

namespace volley::netem {

using Nanos = std::chrono::nanoseconds;

struct LinkCounters {
  std::uint64_t packets_in = 0, bytes_in = 0;
  std::uint64_t packets_out = 0, bytes_out = 0;
  std::uint64_t lost = 0;          // by the loss model
  std::uint64_t queue_full = 0;    // tail-dropped at the limit
  std::uint64_t link_down = 0;     // dropped while the link was down
  std::uint64_t duplicated = 0;    // extra copies made (a loss may then take one copy)
  std::uint64_t corrupted = 0;     // packets with a bit flipped
  std::uint64_t reordered = 0;     // sent ahead of the queue
};

struct Departure {
  std::vector<std::byte> bytes;
  std::uint64_t tag = 0;  // the caller's, carried through (which client, say)
  Nanos arrived{0};
  Nanos departs{0};
  // What the link did to this copy (for captures and traces).
  bool corrupted = false;  // a bit was flipped
  bool duplicate = false;  // the extra copy of a duplicated packet
  bool reordered = false;  // sent at once, ahead of packets still delayed
};

// What the link did with one submitted packet.
struct Admission {
  enum class Drop { none, link_down, lost, queue_full };
  unsigned copies = 0;      // copies queued: 0 (dropped), 1, or 2 (duplicated)
  Drop drop = Drop::none;   // why a copy went no further (with copies 0, why the packet did not)
};
const char* to_string(Admission::Drop drop) noexcept;

class LinkModel {
 public:
  LinkModel(const Impairment& impairment, std::uint64_t seed);

  // A packet arrives at `now`; the answer says whether it (or a copy) was dropped.
  Admission submit(Nanos now, std::vector<std::byte> bytes, std::uint64_t tag = 0);
  // When the next packet is due, if any is held.
  std::optional<Nanos> next_departure() const;
  // Takes the next packet due at or before `now`; false when none is.
  bool take_due(Nanos now, Departure& out);

  void set_down(bool down) noexcept { down_ = down; }
  std::size_t held() const noexcept { return queue_.size(); }
  const LinkCounters& counters() const noexcept { return counters_; }

 private:
  struct Held {
    Departure d;
    std::uint64_t order;  // ties keep arrival order
  };
  struct Later {
    bool operator()(const Held& a, const Held& b) const noexcept {
      return a.d.departs != b.d.departs ? a.d.departs > b.d.departs : a.order > b.order;
    }
  };

  bool lose() noexcept;
  Nanos sample_delay() noexcept;
  Nanos transmission_time(std::size_t bytes) const noexcept;
  // False when the queue was full.
  bool enqueue(Nanos now, std::vector<std::byte> bytes, std::uint64_t tag, bool duplicate);

  Impairment imp_;
  Random rng_;
  CorrelatedUniform delay_u_, loss_u_, duplicate_u_, corrupt_u_, reorder_u_;
  std::vector<double> table_;  // quantiles of pareto or paretonormal, standardised
  int loss_state_ = 1;  // 4-state model: 1..4; Gilbert-Elliott: 1 good, 2 bad
  std::uint32_t reorder_counter_ = 0;
  Nanos last_departure_{0};
  bool down_ = false;
  std::uint64_t next_order_ = 0;
  std::priority_queue<Held, std::vector<Held>, Later> queue_;
  LinkCounters counters_;
};

}  // namespace volley::netem
