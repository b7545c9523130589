#include <volley/net/udp_endpoint.hpp>

#include <netinet/udp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <boost/asio/post.hpp>

#include <volley/net/udp_drops.hpp>

#include <volley/net/close_without_cancel.hpp>

namespace volley::net {

namespace asio = boost::asio;
using asio::ip::udp;

struct UdpReceiveBuffers::Slots {
  Slots(std::size_t batch, std::size_t max_datagram)
      : size(max_datagram),
        // Default-initialised: a large block is mapped, not written, so pages
        // stay unresident until a datagram that large lands in them.
        data(std::make_unique_for_overwrite<std::byte[]>(batch * max_datagram)),
        headers(batch),
        iov(batch),
        addresses(batch) {
    for (std::size_t i = 0; i < batch; ++i) {
      std::memset(&headers[i], 0, sizeof headers[i]);
      headers[i].msg_hdr.msg_iov = &iov[i];
      headers[i].msg_hdr.msg_iovlen = 1;
    }
  }
  std::size_t size;
  std::unique_ptr<std::byte[]> data;
  std::vector<mmsghdr> headers;
  std::vector<iovec> iov;
  std::vector<sockaddr_storage> addresses;
};

UdpReceiveBuffers::UdpReceiveBuffers(std::size_t batch, std::size_t max_datagram)
    : slots_(std::make_unique<Slots>(std::max<std::size_t>(batch, 1), std::max<std::size_t>(max_datagram, 1))) {}
UdpReceiveBuffers::~UdpReceiveBuffers() = default;
std::size_t UdpReceiveBuffers::batch() const noexcept { return slots_->headers.size(); }
std::size_t UdpReceiveBuffers::max_datagram() const noexcept { return slots_->size; }

struct UdpEndpoint::SendHeaders {
  struct Control {
    alignas(cmsghdr) unsigned char bytes[CMSG_SPACE(sizeof(std::uint16_t))];
  };
  std::vector<mmsghdr> headers;  // one per message
  std::vector<iovec> iov;
  std::vector<Control> control;
  std::vector<std::size_t> segments;  // datagrams in each message
};

namespace {
// Linux's limits for one segmented send: 64 segments, and the payload of one IP packet.
constexpr std::size_t kMaxSegments = 64;
constexpr std::size_t kMaxSegmentedBytes = 65507;

std::error_code last_errno() { return {errno, std::system_category()}; }
bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK; }
}  // namespace

UdpEndpoint::UdpEndpoint(asio::io_context& loop, const Endpoint& local, UdpEndpointOptions options)
    : UdpEndpoint(loop.get_executor(), local, std::move(options)) {}

UdpEndpoint::UdpEndpoint(const asio::any_io_executor& executor, const Endpoint& local, UdpEndpointOptions options)
    : socket_(executor), send_headers_(std::make_unique<SendHeaders>()), self_(std::make_shared<UdpEndpoint*>(this)) {
  socket_.open(local.protocol());
  if (options.reuse_port) {
    socket_.set_option(asio::socket_base::reuse_address(true));
    const int one = 1;
    if (::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
      throw boost::system::system_error(errno, boost::system::system_category(), "SO_REUSEPORT");
  }
  if (options.receive_buffer_bytes > 0)
    socket_.set_option(asio::socket_base::receive_buffer_size(options.receive_buffer_bytes));
  if (options.send_buffer_bytes > 0) socket_.set_option(asio::socket_base::send_buffer_size(options.send_buffer_bytes));
  socket_.bind(local);
  apply(options);
}

UdpEndpoint::UdpEndpoint(udp::socket socket, UdpEndpointOptions options)
    : socket_(std::move(socket)),
      send_headers_(std::make_unique<SendHeaders>()),
      self_(std::make_shared<UdpEndpoint*>(this)) {
  apply(options);
}

void UdpEndpoint::apply(const UdpEndpointOptions& options) {
  socket_.non_blocking(true);
  batch_ = std::max<std::size_t>(options.batch, 1);
  segmentation_ = options.segmentation_offload;
  rounds_ = std::max<std::size_t>(options.rounds_per_wakeup, 1);
  buffers_ = options.receive_buffers ? options.receive_buffers
                                     : std::make_shared<UdpReceiveBuffers>(batch_, options.max_datagram);
  pending_.reserve(batch_);
}

UdpEndpoint::~UdpEndpoint() {
  if (!stopped_) flush();  // what was queued is sent, as a closing socket would send it
  self_.reset();  // waits and posted flushes that are still to run find nothing
  close_without_cancel(socket_);
}

void UdpEndpoint::connect(const Endpoint& peer, std::error_code& ec) {
  boost::system::error_code e;
  socket_.connect(peer, e);
  ec = e;
}

udp::endpoint UdpEndpoint::local_endpoint() const {
  boost::system::error_code ignored;
  return socket_.local_endpoint(ignored);
}

void UdpEndpoint::start(DatagramHandler on_datagram, BatchHandler after_batch) {
  on_datagram_ = std::move(on_datagram);
  after_batch_ = std::move(after_batch);
  wait_readable();
}

void UdpEndpoint::stop() {
  if (stopped_) return;
  kernel_drops();  // the last count, before the socket goes
  close_after_flush();
}

void UdpEndpoint::stop(const UdpDropTable& drops) {
  if (stopped_) return;
  kernel_drops(drops);
  close_after_flush();
}

void UdpEndpoint::close_after_flush() {
  flush();
  stopped_ = true;
  close_without_cancel(socket_);
}

std::uint64_t UdpEndpoint::kernel_drops() {
  if (socket_.is_open()) kernel_drops_ = udp_receive_drops(socket_.native_handle()).value_or(kernel_drops_);
  return kernel_drops_;
}

std::uint64_t UdpEndpoint::kernel_drops(const UdpDropTable& table) {
  if (socket_.is_open()) kernel_drops_ = table.drops_of(socket_.native_handle()).value_or(kernel_drops_);
  return kernel_drops_;
}

void UdpEndpoint::send(std::span<const std::byte> datagram, const Endpoint& to) {
  const std::span<std::byte> out = queue(datagram.size(), &to);
  if (!datagram.empty()) std::memcpy(out.data(), datagram.data(), datagram.size());
}

void UdpEndpoint::send(std::span<const std::byte> datagram) {
  const std::span<std::byte> out = queue(datagram.size(), nullptr);
  if (!datagram.empty()) std::memcpy(out.data(), datagram.data(), datagram.size());
}

std::span<std::byte> UdpEndpoint::prepare(std::size_t size, const Endpoint& to) { return queue(size, &to); }
std::span<std::byte> UdpEndpoint::prepare(std::size_t size) { return queue(size, nullptr); }

std::span<std::byte> UdpEndpoint::queue(std::size_t size, const Endpoint* to) {
  if (pending_.size() >= batch_) flush();  // a full batch leaves at once
  const std::size_t offset = arena_.size();
  pending_.push_back({offset, size, to != nullptr ? *to : Endpoint{}, to == nullptr});
  arena_.resize(offset + size);
  schedule_flush();
  return {arena_.data() + offset, size};
}

void UdpEndpoint::schedule_flush() {
  if (dispatching_ || flush_posted_) return;  // the batch's end, or a flush already posted, sends it
  flush_posted_ = true;
  asio::post(socket_.get_executor(), [weak = std::weak_ptr<UdpEndpoint*>(self_)] {
    if (const auto self = weak.lock()) {
      (*self)->flush_posted_ = false;
      (*self)->flush();
    }
  });
}

std::size_t UdpEndpoint::build_messages(std::size_t first) {
  SendHeaders& h = *send_headers_;
  const std::size_t count = pending_.size();
  h.headers.resize(count - first);
  h.iov.resize(count - first);
  h.control.resize(count - first);
  h.segments.resize(count - first);
  std::size_t m = 0;
  for (std::size_t i = first; i < count; ++m) {
    const Pending& p = pending_[i];
    // A run of datagrams to one destination, all of one size but the last
    // (which may be shorter), lies back to back in the arena: with segmentation
    // offload it goes down the stack as one buffer and is cut into datagrams
    // at the end, each an ordinary datagram on the wire.
    std::size_t j = i + 1, bytes = p.size;
    if (segmentation_ && p.size > 0) {
      while (j < count && j - i < kMaxSegments && pending_[j - 1].size == p.size && pending_[j].size > 0 &&
             pending_[j].size <= p.size && bytes + pending_[j].size <= kMaxSegmentedBytes &&
             pending_[j].to_peer == p.to_peer && (p.to_peer || pending_[j].to == p.to)) {
        bytes += pending_[j].size;
        ++j;
      }
    }
    mmsghdr& hdr = h.headers[m];
    std::memset(&hdr, 0, sizeof hdr);
    h.iov[m] = {arena_.data() + p.offset, bytes};
    hdr.msg_hdr.msg_iov = &h.iov[m];
    hdr.msg_hdr.msg_iovlen = 1;
    if (!p.to_peer) {
      hdr.msg_hdr.msg_name = const_cast<void*>(static_cast<const void*>(p.to.data()));
      hdr.msg_hdr.msg_namelen = static_cast<socklen_t>(p.to.size());
    }
    if (j - i > 1) {
      hdr.msg_hdr.msg_control = h.control[m].bytes;
      hdr.msg_hdr.msg_controllen = sizeof h.control[m].bytes;
      cmsghdr* c = CMSG_FIRSTHDR(&hdr.msg_hdr);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
      const auto segment = static_cast<std::uint16_t>(p.size);
      std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
    }
    h.segments[m] = j - i;
    i = j;
  }
  return m;
}

void UdpEndpoint::flush() {
  if (pending_.empty()) return;
  if (stopped_ || !socket_.is_open()) {
    stats_.send_failures += pending_.size();
    pending_.clear();
    arena_.clear();
    return;
  }
  // The arena does not move while the headers point into it: nothing is queued during a flush.
  SendHeaders& h = *send_headers_;
  const std::size_t count = pending_.size();
  std::size_t next = 0;  // the first datagram not yet sent or given up
  while (next < count) {
    const std::size_t messages = build_messages(next);
    const int n = ::sendmmsg(socket_.native_handle(), h.headers.data(), static_cast<unsigned>(messages), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (h.segments[0] > 1 && (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOPROTOOPT)) {
        segmentation_ = false;  // this socket's route cannot segment: one datagram per message from now on
        continue;
      }
      last_error_ = last_errno();
      if (would_block(errno) || errno == ENOBUFS) {
        stats_.send_failures += count - next;  // the send buffer is full: the rest is lost
        break;
      }
      // This message's own trouble (too large, unreachable, a reported ICMP error): skip it.
      stats_.send_failures += h.segments[0];
      next += h.segments[0];
      continue;
    }
    stats_.send_calls += 1;
    for (std::size_t m = 0; m < static_cast<std::size_t>(n); ++m) {
      stats_.bytes_sent += h.iov[m].iov_len;
      stats_.datagrams_sent += h.segments[m];
      next += h.segments[m];
    }
  }
  pending_.clear();
  arena_.clear();
  if (arena_.capacity() > (std::size_t{4} << 20)) arena_.shrink_to_fit();  // one burst of large datagrams
}

void UdpEndpoint::wait_readable() {
  socket_.async_wait(udp::socket::wait_read, [weak = std::weak_ptr<UdpEndpoint*>(self_)](const boost::system::error_code& ec) {
    if (ec) return;
    if (const auto self = weak.lock()) (*self)->on_readable();
  });
}

void UdpEndpoint::on_readable() {
  if (stopped_) return;
  UdpReceiveBuffers::Slots& s = *buffers_->slots_;
  const std::size_t batch = std::min(s.headers.size(), batch_);
  bool drained = false;
  dispatching_ = true;
  for (std::size_t round = 0; round < rounds_ && !drained && !stopped_; ++round) {
    for (std::size_t i = 0; i < batch; ++i) {
      s.iov[i] = {s.data.get() + i * s.size, s.size};
      s.headers[i].msg_hdr.msg_name = &s.addresses[i];
      s.headers[i].msg_hdr.msg_namelen = sizeof s.addresses[i];
      s.headers[i].msg_hdr.msg_flags = 0;
      s.headers[i].msg_len = 0;
    }
    const int n = ::recvmmsg(socket_.native_handle(), s.headers.data(), static_cast<unsigned>(batch), MSG_DONTWAIT,
                             nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (would_block(errno)) {
        drained = true;
        break;
      }
      // A connected socket reports an ICMP error once, then reads on.
      stats_.receive_errors += 1;
      last_error_ = last_errno();
      continue;
    }
    stats_.receive_calls += 1;
    drained = static_cast<std::size_t>(n) < batch;
    Endpoint from;
    for (int i = 0; i < n && !stopped_; ++i) {
      const mmsghdr& h = s.headers[static_cast<std::size_t>(i)];
      if ((h.msg_hdr.msg_flags & MSG_TRUNC) != 0) {
        stats_.truncated += 1;  // never delivered cut
        continue;
      }
      stats_.datagrams_received += 1;
      stats_.bytes_received += h.msg_len;
      if (h.msg_hdr.msg_namelen > from.capacity()) {
        stats_.receive_errors += 1;  // not an IP address: cannot happen on a UDP socket
        continue;
      }
      std::memcpy(from.data(), h.msg_hdr.msg_name, h.msg_hdr.msg_namelen);
      from.resize(h.msg_hdr.msg_namelen);
      on_datagram_({s.data.get() + static_cast<std::size_t>(i) * s.size, h.msg_len}, from);
    }
    if (after_batch_ && !stopped_) after_batch_();
    flush();
  }
  dispatching_ = false;
  if (stopped_) return;
  if (drained) {
    wait_readable();
  } else {
    // More may be waiting: come back after the loop's other work rather than
    // wait for an edge that already came.
    asio::post(socket_.get_executor(), [weak = std::weak_ptr<UdpEndpoint*>(self_)] {
      if (const auto self = weak.lock()) (*self)->on_readable();
    });
  }
}

}  // namespace volley::net
