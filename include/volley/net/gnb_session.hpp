#pragma once
// Glue between a TCP connection and the gNB FrameDecoder: reads land in the
// decoder's buffer, and each decoded frame goes to a Consumer, statically bound
// so the per-frame call inlines. A Consumer provides:
//   void on_frame(TcpConnection&, const wire::gnb::Frame&);
//   void on_rejected(TcpConnection&, const wire::gnb::DecodeResult&);   // frame skipped, stream in sync
//   void on_failed(TcpConnection&, const wire::gnb::DecodeResult&);     // connection will close
//   void on_close(TcpConnection&, const CloseReason&, std::size_t partial_bytes);
//   void on_written(TcpConnection&, std::size_t bytes);
// and, if it wants to know when the connection opened (after a TLS handshake):
//   void on_open(TcpConnection&);
#include <utility>

#include <volley/net/tcp_connection.hpp>
#include <volley/wire/gnb_decoder.hpp>

namespace volley::net {

template <class Consumer>
class GnbStreamHandler final : public StreamHandler {
 public:
  template <class... Args>
  explicit GnbStreamHandler(Args&&... args) : consumer_(std::forward<Args>(args)...) {}

  Consumer& consumer() noexcept { return consumer_; }

  std::span<std::byte> read_buffer() override { return decoder_.prepare(); }

  void on_data(TcpConnection& c, std::size_t n) override {
    using wire::gnb::DecodeStatus;
    if (decoder_.failed()) return;  // the stream is untrusted: drop input until the close completes
    decoder_.commit(n);
    while (!c.closed()) {
      const wire::gnb::DecodeResult r = decoder_.next();
      switch (r.status) {
        case DecodeStatus::need_more: return;
        case DecodeStatus::frame: consumer_.on_frame(c, r.frame); break;
        case DecodeStatus::rejected: consumer_.on_rejected(c, r); break;
        case DecodeStatus::failed:
          consumer_.on_failed(c, r);
          // Replies to frames accepted before the bad header still go out.
          c.close({CloseReason::Kind::protocol_error, r.error.message()});
          return;
      }
    }
  }

  void on_written(TcpConnection& c, std::size_t bytes) override { consumer_.on_written(c, bytes); }

  void on_open(TcpConnection& c) override {
    if constexpr (requires { consumer_.on_open(c); }) consumer_.on_open(c);
  }

  void on_close(TcpConnection& c, const CloseReason& reason) override {
    consumer_.on_close(c, reason, decoder_.failed() ? 0 : decoder_.buffered());
  }

 private:
  wire::gnb::FrameDecoder decoder_;
  Consumer consumer_;
};

}  // namespace volley::net
