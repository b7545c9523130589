#pragma once
// A TLS client on a non-blocking socket, stepped by hand: the test decides
// when its records and its end leave (RawClient's reset() and shutdown_write()).
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <memory>
#include <span>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>

#include <volley/net/stream_transport.hpp>

#include "links.hpp"
#include "raw_client.hpp"

namespace volley::test {

class HandTlsClient {
 public:
  explicit HandTlsClient(int port) : socket_(port), transport_(client_transport(Link::tls)()) {
    ::fcntl(socket_.fd(), F_SETFL, ::fcntl(socket_.fd(), F_GETFL) | O_NONBLOCK);
    // Each record leaves at once: behind an unacknowledged one (the server's
    // acknowledgements are delayed once it has answered), Nagle would hold
    // it, and a reset would drop it unsent.
    const int on = 1;
    ::setsockopt(socket_.fd(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    transport_->attach(socket_.fd());
  }
  bool handshake() {
    for (int step = 0; step < 500; ++step) {
      boost::system::error_code ec;
      const auto wait = transport_->handshake(ec);
      if (ec) return false;
      if (wait == net::StreamTransport::Wait::none) return true;
      pollfd p{socket_.fd(), static_cast<short>(wait == net::StreamTransport::Wait::write ? POLLOUT : POLLIN), 0};
      ::poll(&p, 1, 10);
    }
    return false;
  }
  // One record, all of it on the socket.
  bool send(std::span<const std::byte> bytes) {
    const boost::asio::const_buffer piece(bytes.data(), bytes.size());
    std::size_t taken = 0;
    for (int step = 0; step < 500 && (taken < bytes.size() || transport_->has_buffered_output()); ++step) {
      boost::system::error_code ec;
      taken += transport_->write_some(taken < bytes.size() ? std::span(&piece, 1)
                                                           : std::span<const boost::asio::const_buffer>{}, ec);
      if (ec && ec != boost::asio::error::would_block && ec != boost::asio::error::try_again) return false;
    }
    return taken == bytes.size() && !transport_->has_buffered_output();
  }
  RawClient& socket() { return socket_; }

 private:
  RawClient socket_;
  std::unique_ptr<net::StreamTransport> transport_;
};

}  // namespace volley::test
