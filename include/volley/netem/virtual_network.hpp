#pragma once
// Two ends joined by an impaired link each way, on a virtual clock: the
// in-process network for testing and simulating a sans-IO protocol (KCP's
// test harness is the model). The ends hand their datagrams to send_from_a()
// and send_from_b(); deliver_to_a() and deliver_to_b() hand back those whose
// time has come; advance() moves the clock to the next thing that can happen,
// told the ends' own timers. No socket, no real clock: deterministic for a
// seed, and a long exchange takes milliseconds.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <utility>

#include <volley/netem/impairment.hpp>
#include <volley/netem/link_model.hpp>

namespace volley::netem {

class VirtualNetwork {
 public:
  // The two directions get seeds derived from `seed`, so the same impairment
  // both ways still drops different packets.
  VirtualNetwork(const Impairment& a_to_b, const Impairment& b_to_a, std::uint64_t seed);

  Nanos now() const noexcept { return now_; }

  // A datagram leaving A for B (B for A) now.
  void send_from_a(std::span<const std::byte> datagram);
  void send_from_b(std::span<const std::byte> datagram);

  // Hands each datagram due at B (at A) by now to `receive(std::span<const std::byte>)`.
  template <class Receive>
  void deliver_to_b(Receive&& receive) {
    deliver(a_to_b_, std::forward<Receive>(receive));
  }
  template <class Receive>
  void deliver_to_a(Receive&& receive) {
    deliver(b_to_a_, std::forward<Receive>(receive));
  }

  // Moves the clock to the earliest of the links' next departures and
  // `timers` (the ends' next timeouts, the next scheduled send; empty ones
  // are ignored), never backwards. False, with the clock unmoved, when
  // nothing is left to happen.
  bool advance(std::initializer_list<std::optional<Nanos>> timers);

  // Every datagram sent either way, in bytes, before the links' impairments.
  std::uint64_t wire_bytes() const noexcept { return wire_bytes_; }
  const LinkCounters& a_to_b() const noexcept { return a_to_b_.counters(); }
  const LinkCounters& b_to_a() const noexcept { return b_to_a_.counters(); }

 private:
  template <class Receive>
  void deliver(LinkModel& link, Receive&& receive) {
    while (link.take_due(now_, departure_)) receive(std::span<const std::byte>(departure_.bytes));
  }

  LinkModel a_to_b_, b_to_a_;
  Nanos now_{0};
  Departure departure_;
  std::uint64_t wire_bytes_ = 0;
};

}  // namespace volley::netem
