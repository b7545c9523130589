#pragma once
// A TCP or TLS echo client connection of the pipelined echo benchmark: `in_flight` messages go
// out at once, then one more for each message's worth of bytes that comes back,
// until the deadline; then it waits for the rest of its echoes and closes.
// With --rtt, in_flight is 1 and each round trip is timed.
#include <functional>
#include <memory>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "echo_client_core.hpp"
#include <volley/net/close_without_cancel.hpp>

namespace volley::tools {

template <class Stream>
class StreamEchoClient : public std::enable_shared_from_this<StreamEchoClient<Stream>> {
 public:
  static constexpr std::size_t kReadSize = 64 * 1024;

  template <class... StreamArgs>
  StreamEchoClient(const EchoRun& run, EchoClientCounters& counters, std::function<void()> done, StreamArgs&&... args)
      : stream_(std::forward<StreamArgs>(args)...),
        timer_(stream_.get_executor()),
        run_(run),
        counters_(counters),
        done_(std::move(done)),
        buffer_(std::make_unique_for_overwrite<std::byte[]>(kReadSize)) {}

  void start(const boost::asio::ip::tcp::endpoint& server, const std::string& host_name) {
    auto self = this->shared_from_this();
    timer_.expires_after(std::chrono::seconds(5));
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (ec || self->established_) return;
      self->timed_out_ = true;
      net::close_without_cancel(self->tcp_socket());  // the connect or handshake fails
    });
    socket().async_connect(server, [self, host_name](const boost::system::error_code& ec) {
      if (ec) return self->fail(self->timed_out_ ? "connect timed out" : "connect: " + ec.message());
      self->socket().set_option(boost::asio::ip::tcp::no_delay(true));
      if constexpr (kTls) {
        self->stream_.set_verify_callback(boost::asio::ssl::host_name_verification(host_name));
        if (!self->is_ip(host_name)) SSL_set_tlsext_host_name(self->stream_.native_handle(), host_name.c_str());
        self->stream_.async_handshake(boost::asio::ssl::stream_base::client, [self](const boost::system::error_code& hec) {
          if (hec) return self->fail(self->timed_out_ ? "TLS handshake timed out" : "TLS handshake: " + describe(hec));
          self->begin();
        });
      } else {
        self->begin();
      }
    });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, boost::asio::ip::tcp::socket>;

  auto& socket() {
    if constexpr (kTls) return stream_.lowest_layer();
    else return stream_;
  }
  boost::asio::ip::tcp::socket& tcp_socket() {
    if constexpr (kTls) return stream_.next_layer();
    else return stream_;
  }
  static bool is_ip(const std::string& host) {
    boost::system::error_code ec;
    boost::asio::ip::make_address(host, ec);
    return !ec;
  }
  static std::string describe(const boost::system::error_code& ec) {
    std::string text = ec.message();
    if (ec.category() == boost::asio::error::get_ssl_category()) {
      // OpenSSL's reason says why ("certificate verify failed"), the code alone does not.
      const char* reason = ERR_reason_error_string(ec.value());
      if (reason != nullptr && text.find(reason) == std::string::npos) text += fmt::format(" ({})", reason);
    }
    return text;
  }

  void begin() {
    established_ = true;
    timer_.cancel();
    owed_ = run_.in_flight * run_.message_size;
    sent_at_ = EchoRun::Clock::now();
    write();
    read();
  }

  void write() {
    if (writing_ || owed_ == 0) return;
    writing_ = true;
    const std::size_t n = std::min(owed_, run_.pattern->window());
    auto self = this->shared_from_this();
    boost::asio::async_write(stream_, boost::asio::buffer(run_.pattern->at(sent_, n).data(), n),
                             [self](const boost::system::error_code& ec, std::size_t written) {
                               self->writing_ = false;
                               if (ec) return self->fail("write: " + ec.message());
                               self->sent_ += written;
                               self->owed_ -= written;
                               self->counters_.bytes_sent.add(written);
                               self->write();
                             });
  }

  void read() {
    auto self = this->shared_from_this();
    stream_.async_read_some(boost::asio::buffer(buffer_.get(), kReadSize),
                            [self](const boost::system::error_code& ec, std::size_t n) {
                              if (ec) return self->fail("read: " + describe(ec));
                              self->on_read(n);
                            });
  }

  void on_read(std::size_t n) {
    const std::uint64_t completed =
        take_echo(run_, counters_, received_, sent_at_, std::span<const std::byte>(buffer_.get(), n));
    if (completed > 0 && run_.running()) {
      owed_ += completed * run_.message_size;
      write();
    }
    if (received_ == sent_ + owed_ && !writing_ && !run_.running()) return finish();
    read();
  }

  void finish() {
    boost::system::error_code ignored;
    socket().shutdown(boost::asio::socket_base::shutdown_both, ignored);
    net::close_without_cancel(tcp_socket());  // a read may be in flight
    counters_.finished = EchoRun::Clock::now();
    if (done_) std::exchange(done_, nullptr)();
  }

  void fail(const std::string& why) {
    if (!done_) return;
    counters_.errors.add();
    if (counters_.first_error.empty()) counters_.first_error = why;
    finish();
  }

  Stream stream_;
  boost::asio::steady_timer timer_;
  const EchoRun& run_;
  EchoClientCounters& counters_;
  std::function<void()> done_;
  std::unique_ptr<std::byte[]> buffer_;
  std::uint64_t sent_ = 0;
  std::uint64_t received_ = 0;
  std::size_t owed_ = 0;
  EchoRun::Clock::time_point sent_at_{};
  bool writing_ = false;
  bool established_ = false;
  bool timed_out_ = false;
};

}  // namespace volley::tools
