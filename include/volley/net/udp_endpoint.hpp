#pragma once
// A UDP socket on one loop (or on one strand of a loop that several threads
// run) that moves datagrams in batches: once readable, one
// recvmmsg takes up to `batch` datagrams and hands each to the receive handler;
// replies and other sends are queued and leave together in one sendmmsg, at the
// end of the receive batch that queued them or, for sends made elsewhere (a
// timer, another endpoint's handler), at the end of the current loop turn.
//
// Datagrams are never delivered cut: one larger than `max_datagram` is dropped
// and counted as truncated. A send the kernel refuses (send buffer full,
// unreachable, too large) is dropped and counted, as the network would drop
// it: the protocols above UDP recover from losses, and a sender that blocked
// would stall the loop.
//
// Receive buffers can be shared by every endpoint of a loop (a relay with one
// socket per client holds one set, not one per client): handlers run one at a
// time, so a datagram's bytes are valid only during its handler call. Endpoints
// on different strands run at once, so they must not share them.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <system_error>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include <volley/net/udp_drops.hpp>

namespace volley::net {

// recvmmsg slots: `batch` buffers of `max_datagram` bytes with their address
// slots. Memory is reserved, not touched, until datagrams that large arrive.
class UdpReceiveBuffers {
 public:
  explicit UdpReceiveBuffers(std::size_t batch = 32, std::size_t max_datagram = 65536);
  ~UdpReceiveBuffers();
  UdpReceiveBuffers(const UdpReceiveBuffers&) = delete;
  UdpReceiveBuffers& operator=(const UdpReceiveBuffers&) = delete;

  std::size_t batch() const noexcept;
  std::size_t max_datagram() const noexcept;

 private:
  friend class UdpEndpoint;
  struct Slots;
  std::unique_ptr<Slots> slots_;
};

struct UdpEndpointOptions {
  std::size_t batch = 32;             // datagrams per receive or send system call
  std::size_t max_datagram = 65536;   // larger arrivals are dropped and counted as truncated
  std::size_t rounds_per_wakeup = 16;  // receive batches before yielding to the loop's other work
  // Shared by endpoints of one loop; null: the endpoint makes its own (batch x max_datagram).
  std::shared_ptr<UdpReceiveBuffers> receive_buffers;
  int receive_buffer_bytes = 0;  // SO_RCVBUF; 0: the kernel's default
  int send_buffer_bytes = 0;     // SO_SNDBUF; 0: the kernel's default
  bool reuse_port = false;       // SO_REUSEPORT before bind: several endpoints share a port, one per loop
  // Send runs of equal-sized datagrams to one destination as one buffer the
  // kernel cuts up (UDP generic segmentation offload): the same datagrams on
  // the wire, one trip down the stack. Turned off by itself where a route
  // cannot do it.
  bool segmentation_offload = true;
};

struct UdpEndpointStats {
  std::uint64_t datagrams_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t receive_calls = 0;  // recvmmsg calls that returned datagrams: received / this = batch fill
  std::uint64_t datagrams_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t send_calls = 0;     // sendmmsg calls that sent something
  std::uint64_t send_failures = 0;   // datagrams the kernel refused (each one lost)
  std::uint64_t truncated = 0;       // arrived larger than max_datagram: dropped
  std::uint64_t receive_errors = 0;  // e.g. ICMP port unreachable reported on a connected socket
};

class UdpEndpoint {
 public:
  using Endpoint = boost::asio::ip::udp::endpoint;
  // The datagram's bytes are valid during the call only.
  using DatagramHandler = std::function<void(std::span<const std::byte> datagram, const Endpoint& from)>;
  // After each receive batch's datagrams were handled, before its sends leave.
  using BatchHandler = std::function<void()>;

  // Opens and binds to `local` (port 0: any); throws boost::system::system_error.
  UdpEndpoint(boost::asio::io_context& loop, const Endpoint& local, UdpEndpointOptions options = {});
  // The same on `executor`: every handler, wait and posted flush runs there (a
  // strand, in a thread-pool design).
  UdpEndpoint(const boost::asio::any_io_executor& executor, const Endpoint& local, UdpEndpointOptions options = {});
  // Adopts an open socket, bound or connected (options' socket settings are not applied).
  UdpEndpoint(boost::asio::ip::udp::socket socket, UdpEndpointOptions options = {});
  ~UdpEndpoint();  // sends what is queued
  UdpEndpoint(const UdpEndpoint&) = delete;
  UdpEndpoint& operator=(const UdpEndpoint&) = delete;

  // Fixes the peer: send(bytes) goes there and the kernel drops datagrams from anyone else.
  void connect(const Endpoint& peer, std::error_code& ec);

  // Starts receiving. Handlers may send and may stop() this endpoint, but must
  // not destroy it.
  void start(DatagramHandler on_datagram, BatchHandler after_batch = {});
  // Closes the socket after sending what is queued. Idempotent. The drop
  // count is read first (from `drops` when many sockets stop at once).
  void stop();
  void stop(const UdpDropTable& drops);

  // Queue a datagram to `to`, or to the connected peer.
  void send(std::span<const std::byte> datagram, const Endpoint& to);
  void send(std::span<const std::byte> datagram);
  // Queue a datagram of `size` bytes and return its bytes to fill in place
  // (no copy); valid until the next send, prepare or flush.
  std::span<std::byte> prepare(std::size_t size, const Endpoint& to);
  std::span<std::byte> prepare(std::size_t size);
  // Send what is queued now rather than at the end of the batch or loop turn.
  void flush();
  std::size_t queued() const noexcept { return pending_.size(); }

  bool is_open() const noexcept { return socket_.is_open(); }
  Endpoint local_endpoint() const;
  int native_handle() { return socket_.native_handle(); }
  const UdpEndpointStats& stats() const noexcept { return stats_; }
  // The last error a send or receive met (the count is in stats()).
  std::error_code last_error() const noexcept { return last_error_; }
  // Datagrams the kernel dropped on this socket, its receive buffer full (read
  // from /proc while open, kept from stop(): for reports, not per datagram).
  std::uint64_t kernel_drops();
  // The same from a table read once for many sockets (UdpDropTable::read()).
  std::uint64_t kernel_drops(const UdpDropTable& table);

 private:
  struct Pending {
    std::size_t offset;  // in arena_
    std::size_t size;
    Endpoint to;
    bool to_peer;  // the connected peer: no address
  };
  struct SendHeaders;  // sendmmsg's headers, kept between flushes
  void apply(const UdpEndpointOptions& options);
  void close_after_flush();
  std::span<std::byte> queue(std::size_t size, const Endpoint* to);
  void schedule_flush();
  std::size_t build_messages(std::size_t first);
  void wait_readable();
  void on_readable();

  boost::asio::ip::udp::socket socket_;
  std::size_t batch_;
  std::size_t rounds_;
  std::shared_ptr<UdpReceiveBuffers> buffers_;
  DatagramHandler on_datagram_;
  BatchHandler after_batch_;
  std::vector<std::byte> arena_;  // queued datagrams' bytes, back to back
  std::vector<Pending> pending_;
  std::unique_ptr<SendHeaders> send_headers_;
  UdpEndpointStats stats_;
  std::error_code last_error_;
  std::uint64_t kernel_drops_ = 0;
  bool segmentation_ = true;
  bool dispatching_ = false;  // inside a receive batch: its end flushes
  bool flush_posted_ = false;
  bool stopped_ = false;
  // Posted work and socket waits hold this weakly: one that completes after the
  // endpoint is gone finds it expired and does nothing.
  std::shared_ptr<UdpEndpoint*> self_;
};

}  // namespace volley::net
