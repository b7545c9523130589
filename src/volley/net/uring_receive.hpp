#pragma once
// Receiving through io_uring on a loop whose reactor is Asio's (epoll or
// Asio's own io_uring backend): ReceivePath::io_uring.
//
// Each plain TCP connection keeps one multishot receive in the loop's ring.
// The kernel receives into buffers it picks from a ring of buffers the loop
// provides, and posts a completion per buffer filled; no receive system call
// and no readiness round trip per message. The ring's descriptor is watched by
// the loop's reactor (through an eventfd the kernel signals), so one wake-up
// runs the receives' deferred work and hands over the completions of every
// connection that received meanwhile; the connection then copies its bytes
// into its handler's read buffer (read_some()), and the buffer goes back to
// the kernel at once. Sends stay plain non-blocking writes.
//
// Buffers are shared by every connection on the loop, so none may keep one:
// a connection whose handler's buffer is smaller than what came reads on at
// once (TcpConnection::read_now), and bytes a connection has not taken by the
// end of a batch of completions (it is paused) are copied to its own spill, and a connection whose spill reaches kSpillLimit has its receive
// cancelled until it has read the spill, so the peer's bytes back up into the
// socket and then into the peer (backpressure across the network, as with
// readiness reads). When the kernel finds no free buffer (a burst larger than
// the ring), the receive ends with ENOBUFS and is armed again once buffers are
// back.
//
// A loop of the loop-per-thread design only (one thread issues and reaps);
// UringReceiver::enable() gives it the service. Linux 6.1 or later (multishot
// receive, deferred task work); io_uring_receive_problem() says why not where it cannot run.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/system/error_code.hpp>

#include "connection_input.hpp"

struct io_uring;
struct io_uring_buf_ring;
struct io_uring_sqe;

namespace volley::net {
class TcpConnection;
}

namespace volley::net::detail {

class UringReceiver;

// One connection's receive: owned by the connection, used on its loop's thread.
class UringRead final : public ConnectionInput {
 public:
  // For a plain TCP socket on a loop that has a UringReceiver; else null.
  static std::unique_ptr<UringRead> make_for(boost::asio::ip::tcp::socket& socket);

  UringRead(UringReceiver& receiver, boost::asio::ip::tcp::socket& socket);

  // io_uring, or the readiness wait the connection fell back to.
  Kind kind() const noexcept override { return fallback_ ? fallback_->kind() : Kind::io_uring; }
  // Copies received bytes into `buffer`: the count, or would_block when none
  // are here, eof after the peer's end, or the receive's error.
  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override;
  // More bytes (or the end, or an error) are here after the last read_some.
  bool left_over() const noexcept override {
    if (fallback_) return fallback_->left_over();
    return !held_.empty() || spill_read_ < spill_.size() || ended_;
  }
  // Some of those bytes are still in the loop's shared buffers (until the batch ends).
  bool holds_shared_buffers() const noexcept override { return !held_.empty(); }
  // Waits for the next bytes (arming the receive if it is not): then
  // ready(*connection) runs on the loop. `connection` stays alive while the
  // receive is armed. Where the loop's ring could not be opened (said in the
  // log), the connection waits for readiness instead, from now on.
  void wait(std::shared_ptr<TcpConnection> connection) override;
  // The connection finished: cancels the receive, drops what was received.
  void stop() override;

 private:
  friend class UringReceiver;
  struct Held {
    std::uint16_t buffer;
    std::uint32_t offset;
    std::uint32_t length;
  };
  void arm();
  void on_completion(std::int32_t result, std::uint32_t flags);
  // End of a batch: a waiting connection reads what came.
  void deliver();
  // Then: bytes still in shared buffers move to the spill.
  void spill_held();

  UringReceiver& receiver_;
  boost::asio::ip::tcp::socket& socket_;
  std::unique_ptr<ConnectionInput> fallback_;  // the readiness wait, where the ring could not open
  std::shared_ptr<TcpConnection> keep_;     // set while the kernel may still complete into this
  std::shared_ptr<TcpConnection> waiting_;  // set while the connection waits for input
  std::vector<Held> held_;                  // this batch's buffers, in order
  std::vector<std::byte> spill_;            // bytes from earlier batches, not yet read
  std::size_t spill_read_ = 0;
  boost::system::error_code ended_;  // eof or the error that ended receiving (after the bytes before it)
  // The multishot receive: none in the ring; in it; in it with a cancel
  // submitted (stop(), or the spill at its limit); ended with ENOBUFS, to be
  // armed again by the receiver once buffers are back (until then still on
  // its list of armed reads).
  enum class Receive { idle, armed, cancelling, starved } receive_ = Receive::idle;
  bool stopped_ = false;
  bool listed_ = false;              // on the receiver's list of reads of this batch
};

class UringReceiver : public boost::asio::execution_context::service {
 public:
  using key_type = UringReceiver;
  static boost::asio::execution_context::id id;

  static constexpr unsigned kDefaultBuffers = 512;    // a power of two (the buffer ring's mask)
  static constexpr unsigned kBufferSize = 32 * 1024;  // 16 MiB of buffers per loop, by default
  static constexpr std::size_t kSpillLimit = 256 * 1024;

  struct Stats {
    std::uint64_t batches = 0;      // wake-ups with completions
    std::uint64_t receives = 0;     // completions that carried bytes
    std::uint64_t spilled = 0;      // bytes copied to a connection's spill
    std::uint64_t no_buffers = 0;   // receives ended for want of a free buffer
    std::uint64_t held_back = 0;    // receives cancelled at kSpillLimit
    std::uint64_t arms = 0;         // multishot receives submitted
  };

  // Makes nothing yet: the loop's thread opens the ring at its first receive
  // (ready()). `buffers`: how many the kernel may fill before the loop takes
  // them; std::invalid_argument unless a power of two from 1 to 32768.
  explicit UringReceiver(boost::asio::io_context& loop, unsigned buffers = kDefaultBuffers);
  ~UringReceiver() override;

  static void enable(boost::asio::io_context& loop, unsigned buffers = kDefaultBuffers);
  // The loop's service, or null (no receiver, or `executor` is a strand).
  static UringReceiver* of(const boost::asio::any_io_executor& executor);
  // Empty where a receiver can run here; else why not, in words a user can act on.
  static std::string problem();

  const Stats& stats() const noexcept { return stats_; }

 private:
  friend class UringRead;
  // Opens the ring on the calling thread (see the .cpp for why the loop's); throws where it cannot.
  void open_ring();
  // Opens it at the first call; false (logged once) where it could not be.
  bool ready();
  io_uring_sqe* next_submission();
  void submit_receive(UringRead& read);
  void submit_cancel(UringRead& read);
  const std::byte* buffer(std::uint16_t id) const noexcept { return storage_.get() + std::size_t{id} * kBufferSize; }
  void give_back(std::uint16_t id) noexcept;
  // Waits for the ring's signal. `drained`: called at the end of the signal's
  // own handler, which took every completion, with no reactor wait since.
  void wait_for_completions(bool drained);
  void on_signal(const boost::system::error_code& ec);
  void on_completions();
  void shutdown() override;

  std::unique_ptr<io_uring> ring_;
  unsigned buffers_;
  io_uring_buf_ring* buffer_ring_ = nullptr;
  std::unique_ptr<std::byte[]> storage_;
  boost::asio::io_context& loop_;
  boost::asio::posix::stream_descriptor watch_;  // the ring's eventfd, on the loop's reactor
  // Or, where Asio is the one edge_read_wait.hpp knows, the eventfd waited
  // for on the reactor's edge (uring_receiver.cpp): no re-arm and no read of
  // the eventfd per wake-up.
  class EdgeSignalWait;
  std::unique_ptr<EdgeSignalWait> edge_wait_;
  bool watching_ = false;
  enum class State { unopened, open, failed } state_ = State::unopened;
  std::unordered_set<UringRead*> armed_;  // for shutdown: the reads that keep a connection alive
  std::vector<UringRead*> in_batch_;
  std::vector<UringRead*> starved_;  // ended with ENOBUFS: armed again at the end of the batch
  bool down_ = false;
  Stats stats_;
};

}  // namespace volley::net::detail
