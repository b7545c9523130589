// The loop's io_uring ring that its connections receive through (see uring_receive.hpp).
#include "uring_receive.hpp"

#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <volley/net/tcp_connection.hpp>

#include "edge_read_wait.hpp"

namespace volley::net::detail {

namespace asio = boost::asio;

#if defined(VOLLEY_HAS_EDGE_READ_WAIT)
// The ring's eventfd on the loop's epoll reactor, waited for the way
// EdgeReadWait waits for a socket (edge_read_wait.hpp). Asio registers it
// edge-triggered; its async_wait would re-arm the registration with
// epoll_ctl(MOD) at every wait, and a level wait needs the eventfd read
// back to zero at every wake-up: two system calls a wake-up that this wait
// does without. Every signal the kernel gives raises an edge (eventfd wakes
// its waiters at each one, whatever its count), which the loop's next
// epoll_wait reports. So a wait queued in the signal's own handler, before
// the loop waits again, misses none. A wait queued anywhere else (the first
// receive after an idle spell) may follow an edge the reactor reported to
// nobody: that one reads the eventfd first, and a signal found there
// completes it at once. One thread runs the loop (the receiver's loops are
// the loop-per-thread design's), so no other thread takes an edge meanwhile.
class UringReceiver::EdgeSignalWait final : public asio::detail::reactor_op {
 public:
  // Registers `fd` (which it owns from here) with the reactor; throws where epoll refuses it.
  EdgeSignalWait(UringReceiver& receiver, asio::detail::reactor& reactor, int fd)
      : reactor_op(boost::system::error_code(), &EdgeSignalWait::perform, &EdgeSignalWait::complete),
        receiver_(receiver),
        reactor_(reactor),
        fd_(fd) {
    if (const int error = reactor_.register_descriptor(fd_, registration_); error != 0) {
      reactor_.cleanup_descriptor_data(registration_);
      ::close(fd_);
      throw boost::system::system_error(boost::system::error_code(error, boost::system::system_category()),
                                        "watching the io_uring ring's eventfd");
    }
  }
  // Not while a wait is queued: the loop's shutdown (close(), then the
  // scheduler's) has completed it by the time the receiver goes.
  ~EdgeSignalWait() { close(); }

  void start(bool drained) {
    ec_ = boost::system::error_code();
    bytes_transferred_ = 0;
    check_ = !drained;
    queued_ = false;
    reactor_.start_op(asio::detail::reactor::read_op, fd_, registration_, this, /*is_continuation=*/true,
                      /*allow_speculative=*/true);
    queued_ = true;
  }
  // Ends the registration (a queued wait completes with operation_aborted) and the eventfd.
  void close() {
    if (fd_ < 0) return;
    reactor_.deregister_descriptor(fd_, registration_, /*closing=*/true);
    ::close(fd_);
    reactor_.cleanup_descriptor_data(registration_);
    fd_ = -1;
  }

 private:
  static status perform(asio::detail::reactor_op* base) {
    auto* self = static_cast<EdgeSignalWait*>(base);
    if (self->queued_) return done;  // the edge
    if (!self->check_) return not_done;
    std::uint64_t signals = 0;
    return ::read(self->fd_, &signals, sizeof signals) > 0 ? done : not_done;
  }
  static void complete(void* owner, asio::detail::scheduler_operation* base, const boost::system::error_code&,
                       std::size_t) {
    auto* self = static_cast<EdgeSignalWait*>(base);
    self->queued_ = false;
    if (owner == nullptr) return;  // the loop is being destroyed
    const boost::system::error_code ec = self->ec_;  // (the handler may start the wait again)
    self->receiver_.on_signal(ec);
  }

  UringReceiver& receiver_;
  asio::detail::reactor& reactor_;
  int fd_;
  asio::detail::reactor::per_descriptor_data registration_{};
  bool queued_ = false;  // false while start() hands it to the reactor, which tries it at once
  bool check_ = false;   // that try reads the eventfd
};
#else
// Asio's backend here is not epoll (or not the Asio edge_read_wait.hpp
// knows): the ring's eventfd is always watched with async_wait, and none of
// these is made. Complete only for edge_wait_'s destructor.
class UringReceiver::EdgeSignalWait {};
#endif

namespace {

constexpr unsigned kSubmissionEntries = 256;
constexpr unsigned kCompletionEntries = 4096;
constexpr unsigned short kBufferGroup = 0;
constexpr unsigned kCompletionsPerPeek = 64;

[[noreturn]] void fail(int negative_errno, const char* what) {
  throw boost::system::system_error(boost::system::error_code(-negative_errno, boost::system::system_category()),
                                    what);
}

std::size_t buffer_ring_bytes(unsigned buffers) { return buffers * sizeof(io_uring_buf); }

}  // namespace

asio::execution_context::id UringReceiver::id;

UringReceiver::UringReceiver(asio::io_context& loop, unsigned buffers)
    : asio::execution_context::service(loop),
      ring_(std::make_unique<io_uring>()),
      buffers_(buffers),
      loop_(loop),
      watch_(loop) {
  if (buffers_ == 0 || buffers_ > 32768 || (buffers_ & (buffers_ - 1)) != 0)
    throw std::invalid_argument("UringReceiver: buffers must be a power of two from 1 to 32768");
}

// On the loop's thread, at its first receive. A ring is tied to the thread
// that makes it: with deferred work only that thread may submit, and when
// the ring goes the kernel interrupts its maker's system calls (EINTR) to
// tell it. Made by a thread that constructs loops (a program's main thread),
// its blocking calls would fail at random once a loop is destroyed.
void UringReceiver::open_ring() {
  io_uring_params params{};
  // The receives' work (the copy out of the socket) runs when the loop asks
  // for completions, not when a segment arrives: run at once, it interrupts
  // the loop's thread and contends for the socket's lock with the softirq
  // still delivering to it (on this VM that spin was two thirds of the
  // server's time).
  params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  params.cq_entries = kCompletionEntries;
  if (const int rc = io_uring_queue_init_params(kSubmissionEntries, ring_.get(), &params); rc < 0)
    fail(rc, "io_uring_queue_init");
  struct Undo {
    UringReceiver& self;
    bool done = false;
    ~Undo() {
      if (done) return;
      boost::system::error_code ignored;
      self.watch_.close(ignored);
      self.edge_wait_.reset();
      io_uring_queue_exit(self.ring_.get());
      if (self.buffer_ring_ != nullptr) ::munmap(self.buffer_ring_, buffer_ring_bytes(self.buffers_));
      self.buffer_ring_ = nullptr;
    }
  } undo{*this};
  // The kernel signals this when the first receive work is queued, and with
  // each completion: the loop's reactor watches it.
  const int signal = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (signal < 0) fail(-errno, "an eventfd for the io_uring ring");
#if defined(VOLLEY_HAS_EDGE_READ_WAIT)
  if (asio::use_service<asio::detail::scheduler>(loop_).concurrency_hint() == 1) {
    edge_wait_ = std::make_unique<EdgeSignalWait>(*this, asio::use_service<asio::detail::reactor>(loop_), signal);
  } else
#endif
  {
    boost::system::error_code ec;
    watch_.assign(signal, ec);  // the watch owns it from here
    if (ec) {
      ::close(signal);
      throw boost::system::system_error(ec, "watching the io_uring ring's eventfd");
    }
  }
  if (const int rc = io_uring_register_eventfd(ring_.get(), signal); rc < 0) fail(rc, "io_uring_register_eventfd");
  void* mapped =
      ::mmap(nullptr, buffer_ring_bytes(buffers_), PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
  if (mapped == MAP_FAILED) fail(-errno, "mmap of the provided-buffer ring");
  buffer_ring_ = static_cast<io_uring_buf_ring*>(mapped);
  io_uring_buf_ring_init(buffer_ring_);
  io_uring_buf_reg registration{};
  registration.ring_addr = reinterpret_cast<std::uintptr_t>(mapped);
  registration.ring_entries = buffers_;
  registration.bgid = kBufferGroup;
  if (const int rc = io_uring_register_buf_ring(ring_.get(), &registration, 0); rc < 0)
    fail(rc, "io_uring_register_buf_ring");
  if (storage_ == nullptr)  // untouched until the kernel fills it
    storage_ = std::make_unique_for_overwrite<std::byte[]>(std::size_t{buffers_} * kBufferSize);
  for (unsigned b = 0; b < buffers_; ++b)
    io_uring_buf_ring_add(buffer_ring_, storage_.get() + std::size_t{b} * kBufferSize, kBufferSize,
                          static_cast<unsigned short>(b), io_uring_buf_ring_mask(buffers_), static_cast<int>(b));
  io_uring_buf_ring_advance(buffer_ring_, static_cast<int>(buffers_));
  undo.done = true;
}

bool UringReceiver::ready() {
  if (state_ == State::open) return true;
  if (state_ != State::unopened) return false;
  try {
    open_ring();
    state_ = State::open;
    return true;
  } catch (const std::exception& e) {
    state_ = State::failed;
    spdlog::warn("a loop could not start receiving through io_uring ({}); its connections receive through the reactor",
                 e.what());
    return false;
  }
}

UringReceiver::~UringReceiver() {
  shutdown();
  if (buffer_ring_ != nullptr) ::munmap(buffer_ring_, buffer_ring_bytes(buffers_));
}

void UringReceiver::enable(asio::io_context& loop, unsigned buffers) {
  if (!asio::has_service<UringReceiver>(loop)) asio::add_service(loop, new UringReceiver(loop, buffers));
}

std::string UringReceiver::problem() {
  utsname machine{};
  int major = 0;
  int minor = 0;
  if (::uname(&machine) == 0 && std::sscanf(machine.release, "%d.%d", &major, &minor) == 2 &&
      (major < 6 || (major == 6 && minor < 1))) {
    return fmt::format(
        "receiving through io_uring needs multishot receive and deferred task work, in Linux 6.1 and later; this "
        "kernel is {}",
        machine.release);
  }
  // On a thread of its own: the ring's maker is told when the ring goes, by an
  // interrupted system call (see open_ring), and this thread is gone by then.
  std::string error;
  std::thread([&error] {
    try {
      asio::io_context probe(1);
      UringReceiver receiver(probe, 1);
      receiver.open_ring();
      receiver.shutdown();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }).join();
  if (error.empty()) return {};
  return fmt::format(
      "this process may not receive through io_uring: {} (the kernel may have io_uring turned off, "
      "kernel.io_uring_disabled, or a container's seccomp profile may forbid it); receive through the reactor",
      error);
}

UringReceiver* UringReceiver::of(const asio::any_io_executor& executor) {
  // A strand (the thread-pool design) may run on any of the pool's threads: one thread issues to a ring.
  const auto* own = executor.target<asio::io_context::executor_type>();
  if (own == nullptr) return nullptr;
  asio::io_context& loop = own->context();
  if (!asio::has_service<UringReceiver>(loop)) return nullptr;
  return &asio::use_service<UringReceiver>(loop);
}

io_uring_sqe* UringReceiver::next_submission() {
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (sqe == nullptr) {  // the submission queue is full: hand it to the kernel and take a free entry
    io_uring_submit(ring_.get());
    sqe = io_uring_get_sqe(ring_.get());
  }
  return sqe;
}

void UringReceiver::submit_receive(UringRead& read) {
  ++stats_.arms;
  io_uring_sqe* const sqe = next_submission();
  io_uring_prep_recv_multishot(sqe, read.socket_.native_handle(), nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kBufferGroup;
  io_uring_sqe_set_data(sqe, &read);
  io_uring_submit(ring_.get());
  if (!watching_) wait_for_completions(/*drained=*/false);
}

void UringReceiver::submit_cancel(UringRead& read) {
  io_uring_sqe* const sqe = next_submission();
  io_uring_prep_cancel64(sqe, reinterpret_cast<std::uintptr_t>(&read), 0);
  io_uring_sqe_set_data(sqe, nullptr);  // the cancel's own completion says nothing the receive's will not
  io_uring_submit(ring_.get());
}

void UringReceiver::give_back(std::uint16_t id) noexcept {
  if (down_ || state_ != State::open) return;
  io_uring_buf_ring_add(buffer_ring_, storage_.get() + std::size_t{id} * kBufferSize, kBufferSize, id,
                        io_uring_buf_ring_mask(buffers_), 0);
  io_uring_buf_ring_advance(buffer_ring_, 1);
}

void UringReceiver::wait_for_completions(bool drained) {
  watching_ = true;
#if defined(VOLLEY_HAS_EDGE_READ_WAIT)
  if (edge_wait_ != nullptr) return edge_wait_->start(drained);
#else
  (void)drained;  // a level wait: nothing an edge could have taken
#endif
  watch_.async_wait(asio::posix::stream_descriptor::wait_read,
                    [this](const boost::system::error_code& ec) { on_signal(ec); });
}

void UringReceiver::on_signal(const boost::system::error_code& ec) {
  watching_ = false;
  if (ec || down_) return;
  on_completions();
  // Only while receives are armed: an idle ring is not work that keeps the loop running.
  if (!armed_.empty() && !watching_) wait_for_completions(/*drained=*/true);
}

void UringReceiver::on_completions() {
  ++stats_.batches;
  // A level wait: reset the signal first, so work queued after this read
  // signals again (the edge wait needs no reset: every signal is an edge).
  if (edge_wait_ == nullptr) {
    std::uint64_t signals = 0;
    [[maybe_unused]] const ssize_t drained = ::read(watch_.native_handle(), &signals, sizeof signals);
  }
  io_uring_get_events(ring_.get());  // runs the deferred receives: their completions follow
  struct Completion {
    std::uint64_t data;
    std::int32_t result;
    std::uint32_t flags;
  };
  Completion batch[kCompletionsPerPeek];
  for (;;) {
    io_uring_cqe* cqes[kCompletionsPerPeek];
    const unsigned n = io_uring_peek_batch_cqe(ring_.get(), cqes, kCompletionsPerPeek);
    if (n == 0) break;
    for (unsigned i = 0; i < n; ++i) batch[i] = {cqes[i]->user_data, cqes[i]->res, cqes[i]->flags};
    io_uring_cq_advance(ring_.get(), n);
    for (unsigned i = 0; i < n; ++i) {
      if (batch[i].data == 0) continue;  // a cancel's own completion
      reinterpret_cast<UringRead*>(batch[i].data)->on_completion(batch[i].result, batch[i].flags);
    }
  }
  // Each connection takes what it received in one read (its handler may close
  // others: a closed one takes nothing), then what it left moves to its spill
  // and every buffer goes back to the kernel.
  for (std::size_t i = 0; i < in_batch_.size(); ++i) in_batch_[i]->deliver();
  for (UringRead* read : in_batch_) read->spill_held();
  in_batch_.clear();
  // With the buffers back, receives that found none start again.
  std::vector<UringRead*> starved;
  starved.swap(starved_);
  for (UringRead* read : starved) {
    read->receive_ = UringRead::Receive::idle;
    if (read->stopped_ || read->ended_) {
      armed_.erase(read);
      if (read->keep_ != nullptr) asio::post(loop_, [keep = std::move(read->keep_)] {});
    } else {
      read->arm();
    }
  }
}

void UringReceiver::shutdown() {
  if (down_) return;
  down_ = true;
  boost::system::error_code ignored;
  watch_.close(ignored);
#if defined(VOLLEY_HAS_EDGE_READ_WAIT)
  if (edge_wait_ != nullptr) edge_wait_->close();
#endif
  // Ends every receive: the kernel refers to no read any more.
  if (state_ == State::open) io_uring_queue_exit(ring_.get());
  // Connections the receives kept alive go now; their reads must not call back.
  std::vector<std::shared_ptr<TcpConnection>> released;
  for (UringRead* read : armed_) {
    read->receive_ = UringRead::Receive::idle;
    read->held_.clear();
    released.push_back(std::move(read->keep_));
    released.push_back(std::move(read->waiting_));
  }
  armed_.clear();
  in_batch_.clear();
  starved_.clear();
  released.clear();
}

}  // namespace volley::net::detail
