#include <volley/netem/link_model.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace volley::netem {

namespace {

constexpr std::size_t kTableSize = 4096;  // as netem's distribution tables

// Standardises a table to mean 0 and standard deviation 1 on its own entries, so
// that a jitter setting is the standard deviation of what the link produces.
std::vector<double> standardised(std::vector<double> table) {
  double mean = 0;
  for (double v : table) mean += v;
  mean /= static_cast<double>(table.size());
  double var = 0;
  for (double v : table) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / static_cast<double>(table.size()));
  for (double& v : table) v = (v - mean) / sd;
  return table;
}

// Like netem, heavy-tailed shapes are tables of quantiles: bounded, so their
// spread is what the setting says rather than whatever the far tail drew.
std::vector<double> make_pareto_table() {
  std::vector<double> table(kTableSize);
  for (std::size_t i = 0; i < kTableSize; ++i)
    table[i] = pareto_quantile((static_cast<double>(i) + 0.5) / static_cast<double>(kTableSize));
  return standardised(std::move(table));
}

// netem's paretonormal mixes a quarter pareto and three quarters normal. Its
// quantiles are estimated once from a fixed internal seed (so the link's own seed
// does not change the shape).
std::vector<double> make_paretonormal_table() {
  constexpr std::size_t kSamples = 1 << 16;
  Random rng(0x7061726574);
  std::vector<double> samples(kSamples);
  for (auto& s : samples) s = 0.25 * pareto_quantile(rng.uniform()) + 0.75 * normal_quantile(rng.uniform());
  std::sort(samples.begin(), samples.end());
  std::vector<double> table(kTableSize);
  for (std::size_t i = 0; i < kTableSize; ++i) table[i] = samples[(2 * i + 1) * kSamples / (2 * kTableSize)];
  return standardised(std::move(table));
}

}  // namespace

LinkModel::LinkModel(const Impairment& impairment, std::uint64_t seed)
    : imp_(impairment),
      rng_(seed),
      delay_u_(impairment.delay_correlation),
      loss_u_(impairment.loss.correlation),
      duplicate_u_(impairment.duplicate_correlation),
      corrupt_u_(impairment.corrupt_correlation),
      reorder_u_(impairment.reorder_correlation),
      down_(impairment.down) {
  if (imp_.jitter.count() > 0) {
    if (imp_.distribution == DelayDistribution::pareto) table_ = make_pareto_table();
    if (imp_.distribution == DelayDistribution::paretonormal) table_ = make_paretonormal_table();
  }
}

bool LinkModel::lose() noexcept {
  const LossModel& l = imp_.loss;
  switch (l.kind) {
    case LossModel::Kind::none: return false;
    case LossModel::Kind::random: return loss_u_.next(rng_) < l.probability;
    case LossModel::Kind::state: {
      // The 4-state Markov model of tc-netem (Salsano et al.): 1 = delivering in
      // a good period, 2 = delivering in a burst, 3 = lost in a burst,
      // 4 = an isolated loss in a good period.
      const double u = rng_.uniform();
      switch (loss_state_) {
        case 1:
          if (u < l.p14) { loss_state_ = 4; return true; }
          if (u < l.p14 + l.p13) { loss_state_ = 3; return true; }
          return false;
        case 2:
          if (u < l.p23) { loss_state_ = 3; return true; }
          return false;
        case 3:
          if (u < l.p32) { loss_state_ = 2; return false; }
          if (u < l.p32 + l.p31) { loss_state_ = 1; return false; }
          return true;
        default:
          loss_state_ = 1;
          return false;
      }
    }
    case LossModel::Kind::gemodel: {
      // Gilbert-Elliott: move between good (1) and bad (2), then lose with the
      // new state's probability (1-k in good, 1-h in bad).
      if (loss_state_ == 1) {
        if (rng_.uniform() < l.p) loss_state_ = 2;
      } else if (rng_.uniform() < l.r) {
        loss_state_ = 1;
      }
      return rng_.uniform() < (loss_state_ == 1 ? l.one_minus_k : l.one_minus_h);
    }
  }
  return false;
}

Nanos LinkModel::sample_delay() noexcept {
  const double mu = static_cast<double>(imp_.delay.count());
  const double sigma = static_cast<double>(imp_.jitter.count());
  if (sigma == 0) return imp_.delay;
  const double u = delay_u_.next(rng_);
  double z = 0;
  switch (imp_.distribution) {
    case DelayDistribution::uniform: z = (2 * u - 1) * sigma; break;  // netem: mu +- jitter, flat
    case DelayDistribution::normal: z = normal_quantile(u) * sigma; break;
    case DelayDistribution::pareto:
    case DelayDistribution::paretonormal:
      z = table_[std::min(table_.size() - 1, static_cast<std::size_t>(u * static_cast<double>(table_.size())))] * sigma;
      break;
  }
  return Nanos(std::max<std::int64_t>(0, std::llround(mu + z)));  // a negative delay is none, as in netem
}

Nanos LinkModel::transmission_time(std::size_t bytes) const noexcept {
  if (imp_.rate_bits_per_s == 0) return Nanos(0);
  std::int64_t len = static_cast<std::int64_t>(bytes) + imp_.packet_overhead;
  if (imp_.cell_size) {
    const std::int64_t cells = (len + imp_.cell_size - 1) / imp_.cell_size;
    len = cells * (static_cast<std::int64_t>(imp_.cell_size) + imp_.cell_overhead);
  }
  len = std::max<std::int64_t>(len, 0);
  // At most an hour a packet: a 1 bit/s link with 64 KiB cells would otherwise
  // overflow the clock on its first packet.
  const double ns = static_cast<double>(len) * 8e9 / static_cast<double>(imp_.rate_bits_per_s);
  return Nanos(static_cast<std::int64_t>(std::min(ns, 3600e9)));
}

Admission LinkModel::submit(Nanos now, std::vector<std::byte> bytes, std::uint64_t tag) {
  counters_.packets_in += 1;
  counters_.bytes_in += bytes.size();
  Admission a;
  if (down_) {
    counters_.link_down += 1;
    a.drop = Admission::Drop::link_down;
    return a;
  }
  // As tc-netem: decide on a duplicate first, then a loss takes one copy away.
  int copies = 1;
  if (imp_.duplicate > 0 && duplicate_u_.next(rng_) < imp_.duplicate) {
    ++copies;
    counters_.duplicated += 1;
  }
  if (lose()) {
    counters_.lost += 1;
    --copies;
    a.drop = Admission::Drop::lost;
  }
  if (copies == 0) return a;
  if (copies == 2) {
    if (enqueue(now, bytes, tag, true)) ++a.copies;
    else a.drop = Admission::Drop::queue_full;
  }
  if (enqueue(now, std::move(bytes), tag, false)) ++a.copies;
  else a.drop = Admission::Drop::queue_full;
  return a;
}

bool LinkModel::enqueue(Nanos now, std::vector<std::byte> bytes, std::uint64_t tag, bool duplicate) {
  // The queue limit first, so that `corrupted` counts only copies that go out
  // corrupted (a capture then shows exactly that many).
  if (queue_.size() >= imp_.limit) {
    counters_.queue_full += 1;
    return false;
  }
  bool corrupted = false;
  if (!duplicate && imp_.corrupt > 0 && !bytes.empty() && corrupt_u_.next(rng_) < imp_.corrupt) {
    std::byte& victim = bytes[rng_.below(bytes.size())];
    victim = static_cast<std::byte>(std::to_integer<unsigned>(victim) ^ (1u << rng_.below(8)));
    counters_.corrupted += 1;
    corrupted = true;
  }
  Departure d{std::move(bytes), tag, now, now, corrupted, duplicate, false};
  const bool reorder_now = imp_.reorder_gap != 0 && reorder_counter_ + 1 >= imp_.reorder_gap &&
                           reorder_u_.next(rng_) < imp_.reorder;
  if (reorder_now) {
    // netem sends this one at once, ahead of those still delayed.
    reorder_counter_ = 0;
    counters_.reordered += 1;
    d.reordered = true;
  } else {
    ++reorder_counter_;
    Nanos departs = now + sample_delay();
    if (imp_.rate_bits_per_s) {
      // Serialised behind the packet before it (tc-netem's rate): the link is busy until then.
      // Saturating: a queue of hour-long transmissions ends in the far future, not in the past.
      constexpr Nanos kFarFuture{std::numeric_limits<std::int64_t>::max() / 2};
      const Nanos busy = transmission_time(d.bytes.size());
      departs = std::max(departs, last_departure_);
      departs = departs > kFarFuture - busy ? kFarFuture : departs + busy;
    } else if (imp_.keep_order) {
      departs = std::max(departs, last_departure_);
    }
    last_departure_ = std::max(last_departure_, departs);
    d.departs = departs;
  }
  queue_.push(Held{std::move(d), next_order_++});
  return true;
}

const char* to_string(Admission::Drop drop) noexcept {
  switch (drop) {
    case Admission::Drop::none: return "none";
    case Admission::Drop::link_down: return "link down";
    case Admission::Drop::lost: return "lost";
    case Admission::Drop::queue_full: return "queue full";
  }
  return "?";
}

std::optional<Nanos> LinkModel::next_departure() const {
  if (queue_.empty()) return std::nullopt;
  return queue_.top().d.departs;
}

bool LinkModel::take_due(Nanos now, Departure& out) {
  if (queue_.empty() || queue_.top().d.departs > now) return false;
  // priority_queue::top is const; the element is moved out just before pop.
  out = std::move(const_cast<Held&>(queue_.top()).d);
  queue_.pop();
  counters_.packets_out += 1;
  counters_.bytes_out += out.bytes.size();
  return true;
}

}  // namespace volley::netem
