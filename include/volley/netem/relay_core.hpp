#pragma once
// The part every relay shares: the two directions of an impaired link (up:
// towards the forward side, down: back), the clock that feeds them, and the one
// timer that releases packets when they are due. The relays only move bytes
// between their sockets and this core. Runs on one executor: a loop, or a
// strand of a thread pool.
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <volley/netem/link_model.hpp>

namespace volley::netem {

class RelayCore {
 public:
  using Sink = std::function<void(Departure&)>;
  // Sees each packet as it arrives, with what the link did to it, before any
  // copy of it leaves (for captures). `up`: towards the forward side.
  using ArrivalObserver =
      std::function<void(bool up, std::span<const std::byte> bytes, std::uint64_t tag, const Admission& admission)>;

  RelayCore(const boost::asio::any_io_executor& executor, const Impairment& up, const Impairment& down,
            std::uint64_t seed, Sink up_sink, Sink down_sink);
  RelayCore(boost::asio::io_context& loop, const Impairment& up, const Impairment& down, std::uint64_t seed,
            Sink up_sink, Sink down_sink)
      : RelayCore(loop.get_executor(), up, down, seed, std::move(up_sink), std::move(down_sink)) {}

  void submit_up(std::vector<std::byte> bytes, std::uint64_t tag) { submit(up_, std::move(bytes), tag); }
  void submit_down(std::vector<std::byte> bytes, std::uint64_t tag) { submit(down_, std::move(bytes), tag); }
  void stop();
  void set_arrival_observer(ArrivalObserver observer) { observer_ = std::move(observer); }
  // Cuts (or restores) both directions: arriving packets are dropped and counted.
  void set_down(bool down) noexcept {
    up_.set_down(down);
    down_.set_down(down);
  }

  Nanos now() const;
  const LinkModel& up() const noexcept { return up_; }
  const LinkModel& down() const noexcept { return down_; }

 private:
  void submit(LinkModel& link, std::vector<std::byte> bytes, std::uint64_t tag);
  void release();
  void arm();

  LinkModel up_;
  LinkModel down_;
  Sink up_sink_;
  Sink down_sink_;
  ArrivalObserver observer_;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point origin_;
  bool armed_ = false;
  std::chrono::steady_clock::time_point armed_for_{};
  bool stopped_ = false;
};

}  // namespace volley::netem
