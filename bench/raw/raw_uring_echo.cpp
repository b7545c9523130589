// Raw baseline for the echo benchmarks, beside raw_echo_server: the same TCP
// echo on io_uring (liburing) instead of epoll, with plain sockets and no
// Volley code. THREADS threads each run their own ring on their own
// SO_REUSEPORT listener (the kernel spreads connections). What it uses is what
// makes io_uring worth having for a server: one multishot accept, one
// multishot receive per connection into buffers the kernel picks from a
// provided-buffer ring (no buffer held by an idle connection), the sends of a
// whole completion batch submitted with one system call, and a ring that runs
// its deferred work only when the thread asks (single issuer, deferred task
// run) where the kernel offers that.
// A connection's received buffers are echoed in order, one send in flight at a
// time (two sends on one socket may complete out of order); a short send is
// sent on from where it stopped. A client that does not read holds its
// buffers; when the ring has none left, receiving stops (-ENOBUFS) and starts
// again as sends give buffers back.
//   raw_uring_echo PORT [THREADS]      runs until SIGINT/SIGTERM
#include <liburing.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>
#include <unordered_map>
#include <vector>

#include "loopback.hpp"

namespace {

std::atomic<bool> stop{false};

constexpr unsigned kRingEntries = 4096;
constexpr unsigned kBuffers = 1024;  // a power of two (the buffer ring's mask)
constexpr unsigned kBufferSize = 64 * 1024;  // as the epoll server's reads: 16 KiB made 0.7x as many echoes
constexpr unsigned short kGroup = 0;

enum class Op : std::uint64_t { accept = 1, recv = 2, send = 3 };

std::uint64_t tag(Op op, int fd) { return (static_cast<std::uint64_t>(op) << 32) | static_cast<std::uint32_t>(fd); }
Op op_of(std::uint64_t data) { return static_cast<Op>(data >> 32); }
int fd_of(std::uint64_t data) { return static_cast<int>(data & 0xffffffffu); }

struct Piece {
  unsigned short buffer;
  unsigned length;
  unsigned sent = 0;
};

struct Conn {
  std::deque<Piece> out;  // received, not yet echoed whole; the front is in flight
  bool sending = false;
  bool receiving = false;  // a multishot receive is armed
  bool starved = false;    // the receive ended for want of buffers
  bool ended = false;      // the peer finished or the connection failed
};

class Echo {
 public:
  explicit Echo(int port) : listener_(bench::reuseport_listener(port, "raw_uring_echo: bind")) {
    io_uring_params params{};
    params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(kRingEntries, &ring_, &params) < 0) {
      params = {};  // an older kernel: the plain ring
      if (const int rc = io_uring_queue_init_params(kRingEntries, &ring_, &params); rc < 0) {
        std::fprintf(stderr, "raw_uring_echo: io_uring_queue_init: %s\n", std::strerror(-rc));
        std::exit(1);
      }
    }
    const std::size_t ring_bytes = kBuffers * sizeof(io_uring_buf);
    void* mapped = ::mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mapped == MAP_FAILED) {
      std::perror("raw_uring_echo: mmap");
      std::exit(1);
    }
    buffer_ring_ = static_cast<io_uring_buf_ring*>(mapped);
    io_uring_buf_ring_init(buffer_ring_);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<std::uint64_t>(buffer_ring_);
    reg.ring_entries = kBuffers;
    reg.bgid = kGroup;
    if (const int rc = io_uring_register_buf_ring(&ring_, &reg, 0); rc < 0) {
      std::fprintf(stderr, "raw_uring_echo: io_uring_register_buf_ring: %s\n", std::strerror(-rc));
      std::exit(1);
    }
    storage_.resize(std::size_t{kBuffers} * kBufferSize);
    for (unsigned b = 0; b < kBuffers; ++b)
      io_uring_buf_ring_add(buffer_ring_, buffer(b), kBufferSize, static_cast<unsigned short>(b),
                            io_uring_buf_ring_mask(kBuffers), static_cast<int>(b));
    io_uring_buf_ring_advance(buffer_ring_, kBuffers);
    arm_accept();
  }

  ~Echo() {
    for (auto& [fd, c] : conns_) ::close(fd);
    ::close(listener_);
    io_uring_queue_exit(&ring_);
  }

  void run() {
    __kernel_timespec tick{0, 100'000'000};
    while (!stop.load(std::memory_order_relaxed)) {
      io_uring_cqe* cqe = nullptr;
      const int rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &tick, nullptr);
      if (rc < 0 && rc != -ETIME && rc != -EINTR) {
        std::fprintf(stderr, "raw_uring_echo: wait: %s\n", std::strerror(-rc));
        return;
      }
      unsigned head = 0, seen = 0;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        complete(*cqe);
        ++seen;
      }
      io_uring_cq_advance(&ring_, seen);
    }
  }

 private:
  std::byte* buffer(unsigned b) { return storage_.data() + std::size_t{b} * kBufferSize; }

  io_uring_sqe* sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    if (s == nullptr) {  // the submission queue is full: hand it over and take a fresh entry
      io_uring_submit(&ring_);
      s = io_uring_get_sqe(&ring_);
    }
    return s;
  }

  void arm_accept() {
    io_uring_sqe* s = sqe();
    io_uring_prep_multishot_accept(s, listener_, nullptr, nullptr, SOCK_NONBLOCK);
    io_uring_sqe_set_data64(s, tag(Op::accept, listener_));
  }

  void arm_recv(int fd, Conn& c) {
    io_uring_sqe* s = sqe();
    io_uring_prep_recv_multishot(s, fd, nullptr, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = kGroup;
    io_uring_sqe_set_data64(s, tag(Op::recv, fd));
    c.receiving = true;
    c.starved = false;
  }

  void send_front(int fd, Conn& c) {
    const Piece& p = c.out.front();
    io_uring_sqe* s = sqe();
    io_uring_prep_send(s, fd, buffer(p.buffer) + p.sent, p.length - p.sent, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, tag(Op::send, fd));
    c.sending = true;
  }

  void give_back(unsigned short b) {
    io_uring_buf_ring_add(buffer_ring_, buffer(b), kBufferSize, b, io_uring_buf_ring_mask(kBuffers), 0);
    io_uring_buf_ring_advance(buffer_ring_, 1);
    ++returned_;
  }

  void complete(const io_uring_cqe& cqe) {
    const std::uint64_t data = io_uring_cqe_get_data64(&cqe);
    const int fd = fd_of(data);
    switch (op_of(data)) {
      case Op::accept: {
        if (cqe.res >= 0) {
          const int one = 1;
          ::setsockopt(cqe.res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          arm_recv(cqe.res, conns_[cqe.res]);
        }
        if (!(cqe.flags & IORING_CQE_F_MORE)) arm_accept();
        return;
      }
      case Op::recv: {
        Conn& c = conns_[fd];
        if (!(cqe.flags & IORING_CQE_F_MORE)) c.receiving = false;
        if (cqe.res > 0) {
          c.out.push_back({static_cast<unsigned short>(cqe.flags >> IORING_CQE_BUFFER_SHIFT),
                           static_cast<unsigned>(cqe.res)});
          if (!c.sending) send_front(fd, c);
        } else if (cqe.res == -ENOBUFS) {
          c.starved = true;  // armed again once sends give buffers back
          starved_.push_back(fd);
        } else {
          c.ended = true;  // the peer's end (0) or an error
        }
        if (!c.receiving && !c.ended && !c.starved) arm_recv(fd, c);  // a multishot the kernel ended early
        break;
      }
      case Op::send: {
        Conn& c = conns_[fd];
        c.sending = false;
        if (cqe.res < 0) {
          c.ended = true;
          while (!c.out.empty()) {
            give_back(c.out.front().buffer);
            c.out.pop_front();
          }
          ::shutdown(fd, SHUT_RDWR);  // ends the armed receive too
        } else {
          Piece& p = c.out.front();
          p.sent += static_cast<unsigned>(cqe.res);
          if (p.sent == p.length) {
            give_back(p.buffer);
            c.out.pop_front();
          }
          if (!c.out.empty()) send_front(fd, c);
        }
        break;
      }
    }
    if (returned_ > 0 && !starved_.empty()) rearm_starved();
    close_if_done(fd);
  }

  void rearm_starved() {
    returned_ = 0;
    for (const int fd : starved_) {
      const auto it = conns_.find(fd);
      if (it != conns_.end() && it->second.starved && !it->second.ended) arm_recv(fd, it->second);
    }
    starved_.clear();
  }

  void close_if_done(int fd) {
    const auto it = conns_.find(fd);
    if (it == conns_.end()) return;
    const Conn& c = it->second;
    if (!c.ended || c.sending || c.receiving) return;
    if (!c.out.empty()) return;  // echoes of what came before the end still go out
    ::close(fd);
    conns_.erase(it);
  }

  int listener_;
  io_uring ring_{};
  io_uring_buf_ring* buffer_ring_ = nullptr;
  std::vector<std::byte> storage_;
  std::unordered_map<int, Conn> conns_;
  std::vector<int> starved_;
  unsigned returned_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGINT, [](int) { stop = true; });
  std::signal(SIGTERM, [](int) { stop = true; });
  return bench::serve_on_threads(argc, argv, "raw_uring_echo PORT [THREADS]", [](int port) {
    Echo echo(port);  // made on its thread: the ring has a single issuer
    echo.run();
  });
}
