#pragma once
// An echo client connection of the pipelined echo benchmark on Volley's own
// connection and a transport (WebSocket, WebSocket over TLS): the same
// exchange as the TCP and TLS clients (`in_flight` messages out, one more for
// each message's worth of bytes back, until the deadline; then the rest of the
// echoes and a graceful close), checked against the same pattern.
#include <functional>
#include <memory>
#include <string>

#include <volley/net/tcp_connection.hpp>

#include "echo_client_core.hpp"

namespace volley::tools {

class ConnectionEchoClient final : public net::StreamHandler {
 public:
  static constexpr std::size_t kReadSize = 64 * 1024;

  ConnectionEchoClient(const EchoRun& run, EchoClientCounters& counters, std::function<void()> done)
      : run_(run), counters_(counters), done_(std::move(done)), buffer_(std::make_unique_for_overwrite<std::byte[]>(kReadSize)) {}

  // A connection that could not even be made.
  static void count_failure(EchoClientCounters& counters, const std::string& why) {
    counters.errors.add();
    if (counters.first_error.empty()) counters.first_error = why;
    counters.finished = EchoRun::Clock::now();
  }

  std::span<std::byte> read_buffer() override { return {buffer_.get(), kReadSize}; }

  void on_open(net::TcpConnection& c) override {
    owed_ = run_.in_flight * run_.message_size;
    sent_at_ = EchoRun::Clock::now();
    send_owed(c);
  }

  void on_data(net::TcpConnection& c, std::size_t n) override {
    const std::uint64_t completed =
        take_echo(run_, counters_, received_, sent_at_, std::span<const std::byte>(buffer_.get(), n));
    if (completed > 0 && run_.running()) {
      owed_ += completed * run_.message_size;
      send_owed(c);
    }
    if (received_ == sent_ && !run_.running()) {
      finished_ = true;
      c.close({net::CloseReason::Kind::local_close, {}});
    }
  }

  void on_written(net::TcpConnection&, std::size_t bytes) override { counters_.bytes_sent.add(bytes); }

  void on_close(net::TcpConnection&, const net::CloseReason& reason) override {
    if (!finished_) {
      counters_.errors.add();
      if (counters_.first_error.empty())
        counters_.first_error = std::string(net::to_string(reason.kind)) + (reason.detail.empty() ? "" : ": " + reason.detail);
    }
    counters_.finished = EchoRun::Clock::now();
    if (done_) std::exchange(done_, nullptr)();
  }

 private:
  // The pattern is shared and never changes: lent to the write queue, not copied.
  void send_owed(net::TcpConnection& c) {
    if (owed_ == 0) return;
    if (!c.send_borrowed(run_.pattern->at(sent_, owed_))) return;
    sent_ += owed_;
    owed_ = 0;
  }

  const EchoRun& run_;
  EchoClientCounters& counters_;
  std::function<void()> done_;
  std::unique_ptr<std::byte[]> buffer_;
  std::uint64_t sent_ = 0;
  std::uint64_t received_ = 0;
  std::size_t owed_ = 0;
  EchoRun::Clock::time_point sent_at_{};
  bool finished_ = false;
};

}  // namespace volley::tools
