#pragma once
// One generator connection, living on one loop: it sends pre-encoded blocks as
// fast as the socket takes them (or paced to a rate), stamps every control
// message with a fresh transaction id, and times the target's replies.
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>

#include <boost/asio/steady_timer.hpp>

#include <volley/metrics/counter.hpp>
#include <volley/metrics/histogram.hpp>
#include <volley/net/session.hpp>
#include <volley/net/tcp_connection.hpp>
#include <volley/gnb/protocol.hpp>

#include "gen_plan.hpp"

namespace volley::tools {

struct GenConfig {
  std::vector<MessageSpec> specs;
  std::vector<std::size_t> order;  // interleave(specs)
  std::chrono::nanoseconds duration{std::chrono::seconds(10)};
  double rate_per_connection = 0;  // messages per second; 0: as fast as possible
  PayloadKind payload = PayloadKind::filler;
};

struct GenResults {
  std::vector<std::uint64_t> frames_per_spec;
  std::vector<std::uint64_t> bytes_per_spec;
  std::uint64_t acks = 0, nacks = 0, ack_checksums = 0, checksum_mismatches = 0, unmatched_replies = 0;
  std::uint64_t unexpected_frames = 0, protocol_errors = 0, refused_sends = 0;
  std::uint64_t keepalives_in = 0, keepalives_out = 0;
  metrics::Histogram rtt_ns;
  std::chrono::nanoseconds send_time{0};  // first send to last completed write
  std::string close_reason;
  bool clean = false;  // closed after sending everything, by us
};

class GenConnection {
 public:
  GenConnection(const GenConfig& config, std::size_t index, boost::asio::io_context& loop);
  GenConnection(const GenConnection&) = delete;
  GenConnection& operator=(const GenConnection&) = delete;

  // On the connection's loop; `session` is the connection's handler. `on_done`
  // runs there once the connection is closed.
  void start(std::shared_ptr<net::TcpConnection> connection, net::Session& session, std::function<void()> on_done);
  // Ends sending early (SIGINT); safe to post from any thread to the loop.
  void stop();

  // From the protocol handler.
  void on_reply(const gnb::Frame& frame);
  void on_bad_input() { results_.protocol_errors += 1; }
  void on_written(std::size_t bytes);
  void on_closed(const net::CloseReason& reason);
  // The connection is open (after its TLS handshake, if any): sending starts.
  void on_opened();

  // Progress, readable from any thread.
  std::uint64_t frames_sent() const noexcept { return frames_sent_.load(); }
  std::uint64_t bytes_sent() const noexcept { return bytes_sent_.load(); }
  std::uint64_t replies() const noexcept { return replies_.load(); }
  // After the loop has finished.
  const GenResults& results() const noexcept { return results_; }

 private:
  struct InFlight {
    std::size_t bytes;
    std::uint64_t first_message;  // position in the endless message sequence
    std::uint64_t messages;
    int block;  // which of blocks_ to refill, or -1 for a paced batch
  };
  struct Outstanding {
    std::uint32_t transaction_id = 0;
    bool answered = true;
    std::int64_t sent_ns = 0;
    // The body as sent but for its id: a block's bytes, which later stamps
    // change only in the id. Its checksum is computed when a reply asks.
    const std::byte* body = nullptr;
    std::size_t body_size = 0;
  };
  static constexpr std::size_t kOutstanding = 1 << 16;

  // Hands bytes to the session; false (nothing queued) when it refuses them.
  bool send_framed(std::span<const std::byte> frames, std::size_t messages, net::Session::Buffer buffer);
  void send_block(int index);
  void send_paced();
  void arm_pacer();
  // Writes the next transaction id into `body`; `stable_body` holds the same
  // body for as long as a reply may come (the block itself, or the cycle a
  // paced batch was copied from).
  void stamp(std::byte* body, const std::byte* stable_body, std::size_t size, std::int64_t now_ns);
  // The CRC-32C of the body `o` was sent with, its id included.
  static std::uint32_t checksum_of(const Outstanding& o);
  // Adds messages first..first+count-1 of the order to the per-spec results.
  void count_sent(std::uint64_t first, std::uint64_t count);
  void finish_if_drained();
  static std::int64_t now_ns();

  const GenConfig& config_;
  boost::asio::steady_timer stop_timer_;
  boost::asio::steady_timer pacer_;
  std::shared_ptr<net::TcpConnection> connection_;
  net::Session* session_ = nullptr;  // owned by connection_
  std::function<void()> on_done_;

  std::array<FrameBlock, 2> blocks_;  // full-speed mode: one in the kernel, one queued
  FrameBlock cycle_;                  // paced mode: one cycle of the order, copied per message
  std::vector<std::byte> staging_;
  std::deque<InFlight> in_flight_;
  std::uint64_t next_message_ = 0;  // messages handed to the connection
  std::uint32_t next_transaction_ = 1;
  std::vector<std::uint64_t> frames_per_cycle_;  // per spec, in one cycle of the order
  std::vector<Outstanding> outstanding_;
  std::chrono::steady_clock::time_point started_;
  bool stopping_ = false;
  bool finished_sending_ = false;

  metrics::SingleWriterCounter frames_sent_, bytes_sent_, replies_;
  GenResults results_;
};

}  // namespace volley::tools
