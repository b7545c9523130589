#pragma once
// Glue between a TCP connection and the gNB FrameDecoder without a session:
// reads land in the decoder's buffer, and each decoded frame goes to a
// Consumer, statically bound so the per-frame call inlines. No keepalives, no
// liveness check: for those run a net::Session with make_gnb_codec()
// (volley/gnb/session_codec.hpp), as `volley target` does. A Consumer provides:
//   void on_frame(net::TcpConnection&, const gnb::Frame&);
//   void on_rejected(net::TcpConnection&, const gnb::DecodeResult&);   // frame skipped, stream in sync
//   void on_failed(net::TcpConnection&, const gnb::DecodeResult&);     // connection will close
//   void on_close(net::TcpConnection&, const CloseReason&, std::size_t partial_bytes);
//   void on_written(net::TcpConnection&, std::size_t bytes);
// and, if it wants to know when the connection opened (after a TLS handshake):
//   void on_open(net::TcpConnection&);
#include <utility>

#include <volley/gnb/decoder.hpp>
#include <volley/net/tcp_connection.hpp>

namespace volley::gnb {

template <class Consumer>
class ConnectionHandler final : public net::StreamHandler {
 public:
  template <class... Args>
  explicit ConnectionHandler(Args&&... args) : consumer_(std::forward<Args>(args)...) {}

  Consumer& consumer() noexcept { return consumer_; }

  std::span<std::byte> read_buffer() override { return decoder_.prepare(); }

  void on_data(net::TcpConnection& c, std::size_t n) override {
    using gnb::DecodeStatus;
    if (decoder_.failed()) return;  // the stream is untrusted: drop input until the close completes
    decoder_.commit(n);
    while (!c.closed()) {
      const gnb::DecodeResult r = decoder_.next();
      switch (r.status) {
        case DecodeStatus::need_more: return;
        case DecodeStatus::frame: consumer_.on_frame(c, r.frame); break;
        case DecodeStatus::rejected: consumer_.on_rejected(c, r); break;
        case DecodeStatus::failed:
          consumer_.on_failed(c, r);
          // Replies to frames accepted before the bad header still go out.
          c.close({net::CloseReason::Kind::protocol_error, r.error.message()});
          return;
      }
    }
  }

  void on_written(net::TcpConnection& c, std::size_t bytes) override { consumer_.on_written(c, bytes); }

  void on_open(net::TcpConnection& c) override {
    if constexpr (requires { consumer_.on_open(c); }) consumer_.on_open(c);
  }

  void on_close(net::TcpConnection& c, const net::CloseReason& reason) override {
    consumer_.on_close(c, reason, decoder_.failed() ? 0 : decoder_.buffered());
  }

 private:
  gnb::FrameDecoder decoder_;
  Consumer consumer_;
};

}  // namespace volley::gnb
