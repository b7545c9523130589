#pragma once
// Busy polling without a reactor round trip. On a busy-polling loop of the
// loop-per-thread design, a connection that waits for input is put here
// instead of on the reactor, and the spinning loop reads its socket directly
// on every turn: the read that finds the data hands it over at once. Through
// the reactor the same message costs a readiness report (epoll_wait), a queued
// handler, then the read. Only a few connections spin at a time (a read per
// connection per turn does not scale like epoll does); the rest wait on the
// reactor as usual.
//
// An Asio service of the loop's io_context, so it lives and dies with the loop;
// used by the loop's one thread only.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <boost/asio/execution_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace volley::net {
class TcpConnection;
}

namespace volley::net::detail {

class SpinReaders : public boost::asio::execution_context::service {
 public:
  using key_type = SpinReaders;
  static boost::asio::execution_context::id id;

  // Connections spinning at once; more wait on the reactor.
  static constexpr std::size_t kMaxConnections = 8;
  // Socket reads between two polls of the loop's other work (timers, the
  // reactor's other descriptors, posted handlers): a poll is a system call too,
  // and polling after every read would make each turn twice as long as the
  // read that detects the data.
  static constexpr std::size_t kReadsPerPoll = 16;

  struct Stats {
    std::uint64_t checks = 0;   // waiting connections checked (a socket read, unless it closed or paused meanwhile)
    std::uint64_t inputs = 0;   // checks that found input (or the end, or an error)
    std::uint64_t refused = 0;  // waits sent to the reactor because kMaxConnections were spinning
    std::uint64_t left_reactor = 0;    // sockets taken out of the reactor to spin (reactor_membership.hpp)
    std::uint64_t rejoined_reactor = 0;  // ... and put back, for a wait or a write that needed it
  };

  explicit SpinReaders(boost::asio::io_context& loop);

  // Spinning is for loops run by one thread that busy-polls: LoopPool turns it
  // on for its busy-polling loops in the loop-per-thread design.
  static void enable(boost::asio::io_context& loop);
  // The loop's service, or null where spinning is off (or `executor` is a strand).
  static SpinReaders* of(const boost::asio::any_io_executor& executor);

  // Takes `connection` (moved from) as waiting for input; false when full,
  // leaving it as it was (it then waits on the reactor).
  bool wait(std::shared_ptr<TcpConnection>& connection);
  // Connections wait here (spin() has work).
  bool spinning() const noexcept { return !waiting_.empty(); }
  // Whether wait() would take one more.
  bool has_room() const noexcept { return waiting_.size() < kMaxConnections; }
  // Reads the waiting connections' sockets, up to kReadsPerPoll reads in all
  // or until one of them finds input; returns after that, true when one did.
  bool spin();
  // Read on the loop's thread, or once it has stopped.
  const Stats& stats() const noexcept { return stats_; }
  // A spinning connection's socket left the reactor, or went back.
  void count_reactor_move(bool left) noexcept { ++(left ? stats_.left_reactor : stats_.rejoined_reactor); }

 private:
  void shutdown() override;

  boost::asio::io_context& loop_;
  std::vector<std::shared_ptr<TcpConnection>> waiting_;
  std::vector<std::shared_ptr<TcpConnection>> checking_;
  // Keeps the loop running while connections wait here: to the io_context they are not work.
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  Stats stats_;
};

}  // namespace volley::net::detail
