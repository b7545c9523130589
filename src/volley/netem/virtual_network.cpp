#include <volley/netem/virtual_network.hpp>

#include <algorithm>
#include <vector>

namespace volley::netem {

VirtualNetwork::VirtualNetwork(const Impairment& a_to_b, const Impairment& b_to_a, std::uint64_t seed)
    : a_to_b_(a_to_b, seed), b_to_a_(b_to_a, seed * 7919 + 1) {}

void VirtualNetwork::send_from_a(std::span<const std::byte> datagram) {
  wire_bytes_ += datagram.size();
  a_to_b_.submit(now_, std::vector<std::byte>(datagram.begin(), datagram.end()));
}

void VirtualNetwork::send_from_b(std::span<const std::byte> datagram) {
  wire_bytes_ += datagram.size();
  b_to_a_.submit(now_, std::vector<std::byte>(datagram.begin(), datagram.end()));
}

bool VirtualNetwork::advance(std::initializer_list<std::optional<Nanos>> timers) {
  std::optional<Nanos> next;
  const auto consider = [&](std::optional<Nanos> t) {
    if (t && (!next || *t < *next)) next = t;
  };
  consider(a_to_b_.next_departure());
  consider(b_to_a_.next_departure());
  for (const auto& t : timers) consider(t);
  if (!next) return false;
  now_ = std::max(now_, *next);
  return true;
}

}  // namespace volley::netem
