#pragma once
// Calls `tick` once a second on a loop until stop(), for the tools' progress lines.
#include <chrono>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace volley::tools {

class ProgressTimer {
 public:
  ProgressTimer(boost::asio::io_context& loop, std::function<void()> tick) : timer_(loop), tick_(std::move(tick)) {}

  void start() {
    timer_.expires_after(std::chrono::seconds(1));
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopped_) return;  // a cancel() can miss a tick whose handler is already queued
      tick_();
      start();
    });
  }
  void stop() {
    stopped_ = true;
    timer_.cancel();
  }

 private:
  boost::asio::steady_timer timer_;
  std::function<void()> tick_;
  bool stopped_ = false;
};

}  // namespace volley::tools
