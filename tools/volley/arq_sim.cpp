#include "arq_sim.hpp"

#include <chrono>

#include <volley/netem/impairment.hpp>
#include <volley/netem/virtual_network.hpp>

namespace volley::tools {

namespace {

using arq::Nanos;

struct Configs {
  arq::SenderConfig sender;
  arq::ReceiverConfig receiver;
};

Configs configs_for(const ArqVariant& v, const ArqSimOptions& o) {
  Configs c;
  c.sender.scheme = c.receiver.scheme = v.scheme;
  c.sender.window = c.receiver.window = o.window;
  c.sender.max_payload = 65000;
  c.sender.fast_retransmit_after = o.fast_retransmit_after;
  if (o.fixed_timeout_s > 0)
    c.sender.rto.fixed = std::chrono::duration_cast<Nanos>(std::chrono::duration<double>(o.fixed_timeout_s));
  return c;
}

}  // namespace

ArqRunResult simulate_arq(const ArqScenario& scenario, const ArqVariant& variant, const ArqSimOptions& options,
                          std::uint64_t seed) {
  ArqRunResult r;
  if (variant.kind != ArqVariant::Kind::arq) {
    r.error = "the simulation runs the ARQ schemes only";
    return r;
  }
  std::string parse_error;
  const auto impairment = netem::parse_impairment(scenario.netem, parse_error);
  if (!impairment) {
    r.error = parse_error;
    return r;
  }
  netem::VirtualNetwork net(*impairment, *impairment, seed);
  const Configs c = configs_for(variant, options);
  arq::ArqEndpoint a(c.sender, c.receiver, variant.fec), b(c.sender, c.receiver, variant.fec);
  const std::size_t size = scenario.size ? scenario.size : options.size;
  const Nanos interval = std::chrono::duration_cast<Nanos>(std::chrono::duration<double, std::milli>(scenario.interval_ms));

  std::uint64_t sent = 0;
  const auto to_b = [&](std::span<const std::byte> p) { net.send_from_a(p); };
  const auto to_a = [&](std::span<const std::byte> p) { net.send_from_b(p); };
  const auto record = [&](std::span<const std::byte> m) {
    const Stamp s = read_stamp(m);
    // Exactly the sent stream: in order, once, intact.
    if (s.seq != r.records.size() || m.size() != size || !intact(m))
      r.error = "message " + std::to_string(r.records.size()) + " arrived out of order, twice or damaged";
    r.records.push_back({s.seq, s.input_ns, net.now().count()});
  };
  const auto at_b = [&](std::span<const std::byte> m) {
    if (!scenario.echo) return record(m);
    r.payload_bytes += m.size();
    if (!b.send(m)) r.error = "the echoing end refused a message: " + b.sender().error().message();
  };
  const auto at_a = [&](std::span<const std::byte> m) {
    if (scenario.echo) record(m);
  };

  // Long enough for stop-and-wait's queue in scenario 2, bounded all the same.
  const Nanos limit = interval * static_cast<std::int64_t>(scenario.count) * 20 + std::chrono::minutes(10);
  while (net.now() < limit && r.error.empty()) {
    const Nanos now = net.now();
    while (sent < scenario.count && interval * static_cast<std::int64_t>(sent) <= now) {
      const auto m = stamped_message(sent, (interval * static_cast<std::int64_t>(sent)).count(), size);
      if (!a.send(m)) {
        r.error = "the sender refused a message: " + a.sender().error().message();
        break;
      }
      r.payload_bytes += m.size();
      ++sent;
    }
    if (sent == scenario.count) a.close();
    a.poll(now, to_b);
    b.poll(now, to_a);
    net.deliver_to_b([&](std::span<const std::byte> p) { b.on_datagram(p, now, to_a, at_b); });
    net.deliver_to_a([&](std::span<const std::byte> p) { a.on_datagram(p, now, to_b, at_a); });
    a.poll(now, to_b);
    b.poll(now, to_a);
    if (r.records.size() == scenario.count) break;
    if (a.sender().failed()) r.error = a.sender().error().message();
    if (b.sender().failed()) r.error = b.sender().error().message();

    const std::optional<Nanos> next_send =
        sent < scenario.count ? std::optional(interval * static_cast<std::int64_t>(sent)) : std::nullopt;
    if (!net.advance({a.next_timeout(), b.next_timeout(), next_send})) {
      r.error = "stalled: nothing left to happen with messages undelivered";
      break;
    }
  }
  if (r.error.empty() && r.records.size() != scenario.count) r.error = "did not finish within the time limit";
  r.seconds = std::chrono::duration<double>(net.now()).count();
  r.sender = a.sender().stats();
  r.receiver = b.receiver().stats();
  if (const auto* f = a.fec_encoder()) r.fec = f->stats();
  r.fec_decoder = b.fec_decoder().stats();
  for (const arq::ArqEndpoint* e : {&a, &b}) {
    r.data_bytes += e->sender().stats().bytes_on_wire;
    if (const auto* f = e->fec_encoder()) r.data_bytes += f->stats().repair_bytes;
  }
  r.wire_bytes = net.wire_bytes();
  r.up = net.a_to_b();
  r.down = net.b_to_a();
  return r;
}

}  // namespace volley::tools
