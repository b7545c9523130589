#include <volley/net/shm.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <boost/asio/error.hpp>
#include <fmt/format.h>

#include <volley/wire/error.hpp>
#include <volley/wire/shm_ring.hpp>

namespace volley::net {

namespace {

namespace asio = boost::asio;
namespace shm = wire::shm;

constexpr char kOffer = 'O';     // the client's first byte, with the region and the room doorbell
constexpr char kAnswer = 'A';    // the server's: mapped, the rings are open
constexpr char kDoorbell = 'D';  // any later byte: a doorbell
// A reader that spins asks for no doorbell, and looks at the socket (for the
// peer's end) once in this many reads that find the ring empty.
constexpr unsigned kEmptyReadsPerSocketLook = 256;

boost::system::error_code errno_error() { return {errno, boost::system::system_category()}; }
bool would_block_now(int error) { return error == EAGAIN || error == EWOULDBLOCK; }

// The set-up's messages: one byte, with room for `Fds` descriptors beside it.
template <std::size_t Fds>
struct OneByteMessage {
  explicit OneByteMessage(char b) : byte(b) {
    header.msg_iov = &piece;
    header.msg_iovlen = 1;
    header.msg_control = control.data();
    header.msg_controllen = control.size();
  }
  OneByteMessage(const OneByteMessage&) = delete;
  OneByteMessage& operator=(const OneByteMessage&) = delete;
  char byte;
  iovec piece{&byte, 1};
  alignas(cmsghdr) std::array<unsigned char, CMSG_SPACE(Fds * sizeof(int))> control{};
  msghdr header{};
};

void ring_doorbell(int fd) {
  // Best effort: a doorbell already waiting in a full socket wakes the peer as well.
  const char bell = kDoorbell;
  [[maybe_unused]] const ssize_t n = ::send(fd, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

class ShmTransport final : public StreamTransport {
 public:
  ShmTransport(ShmRole role, ShmOptions options)
      : role_(role), options_(options), step_(role == ShmRole::client ? Step::offer : Step::await_offer) {}
  ~ShmTransport() override {
    if (region_ != nullptr) ::munmap(region_, region_size_);
    for (int fd : {memfd_, room_, peer_room_})
      if (fd >= 0) ::close(fd);
  }

  void attach(int fd) override { fd_ = fd; }

  Wait handshake(boost::system::error_code& ec) override {
    ec.clear();
    switch (step_) {
      case Step::offer:
        if (region_ == nullptr && !make_region(ec)) return Wait::none;
        if (!send_offer(ec)) return ec ? Wait::none : Wait::write;
        step_ = Step::await_answer;
        [[fallthrough]];
      case Step::await_answer: {
        char answer = 0;
        if (!receive_byte(answer, ec)) return ec ? Wait::none : Wait::read;
        if (answer != kAnswer) ec = wire::Errc::corrupt_ring;
        if (ec) return Wait::none;
        return open_rings();
      }
      case Step::await_offer:
        if (!take_offer(ec)) return ec ? Wait::none : Wait::read;
        step_ = Step::answer;
        [[fallthrough]];
      case Step::answer: {
        const char answer = kAnswer;
        if (::send(fd_, &answer, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
          if (would_block_now(errno)) return Wait::write;
          ec = errno_error();
          return Wait::none;
        }
        return open_rings();
      }
      case Step::open: return Wait::none;
    }
    return Wait::none;
  }

  std::size_t read_some(std::span<std::byte> buffer, boost::system::error_code& ec) override {
    ec.clear();
    blocked_ = Wait::none;
    if (asked_for_doorbell_) {
      reader_.awake();
      asked_for_doorbell_ = false;
      look_at_socket();  // what woke us: doorbells to take, or the end
    }
    std::error_code ring_error;
    std::size_t n = reader_.read(buffer, ring_error);
    if (n == 0 && !ring_error && ++empty_reads_ % kEmptyReadsPerSocketLook == 0) {
      look_at_socket();
      n = reader_.read(buffer, ring_error);
    }
    if (ring_error) {
      ec = ring_error;
      return 0;
    }
    if (n > 0) {
      if (reader_.writer_needs_doorbell()) ring_doorbell(room_);
      return n;
    }
    // Empty. Bytes written before the peer's end are in the ring before the
    // end is seen, so an empty ring after the end is the whole stream.
    if (socket_error_) {
      ec = socket_error_;
    } else if (input_ended_ || reader_.writer_closed()) {
      ec = asio::error::eof;
    } else {
      ec = asio::error::would_block;
      blocked_ = Wait::read;
    }
    return 0;
  }

  std::size_t write_some(std::span<const asio::const_buffer> buffers, boost::system::error_code& ec) override {
    ec.clear();
    blocked_ = Wait::none;
    if (waiting_for_room_) {
      waiting_for_room_ = false;
      take_room_doorbells();
    }
    if (peer_gone_) {
      ec = asio::error::broken_pipe;
      return 0;
    }
    std::size_t total = 0;
    std::error_code ring_error;
    for (int attempt = 0; attempt < 2 && total == 0 && !buffers.empty(); ++attempt) {
      for (const auto& b : buffers) {
        const std::size_t n = writer_.copy_in({static_cast<const std::byte*>(b.data()), b.size()}, ring_error);
        total += n;
        if (ring_error || n < b.size()) break;
      }
      if (ring_error) {
        ec = ring_error;
        return 0;
      }
      if (total > 0) break;  // published below, once for the whole batch
      // Full: ask the reader for a doorbell when it frees room, unless it just did.
      if (!writer_.ask_for_room(ring_error) && !ring_error) continue;
      if (ring_error) {
        ec = ring_error;
        return 0;
      }
      waiting_for_room_ = true;
      blocked_ = Wait::own_descriptor;
      ec = asio::error::would_block;
      break;  // what was built in place is published all the same
    }
    if (total > 0 || std::exchange(built_in_place_, false)) {
      writer_.publish();
      if (writer_.reader_needs_doorbell()) ring_doorbell(fd_);
    }
    return total;
  }

  std::span<std::byte> reserve_output(std::size_t size) override {
    if (step_ != Step::open || peer_gone_ || waiting_for_room_) return {};
    std::error_code ring_error;  // a corrupt ring is found again by the write_some that follows
    return writer_.reserve(size, ring_error);
  }

  void commit_output(std::size_t used) override {
    writer_.commit(used);
    built_in_place_ = built_in_place_ || used > 0;
  }

  Wait blocked_on() const override { return blocked_; }
  int own_descriptor() const override { return room_; }

  bool has_buffered_input() const override {
    if (step_ != Step::open) return false;
    std::error_code ec;
    return reader_.readable(ec) > 0 || ec || input_ended_ || reader_.writer_closed();
  }

  bool worth_reading() override {
    // Every so often a read anyway: it looks at the socket for the peer's end.
    return ++empty_looks_ % kEmptyReadsPerSocketLook == 0 || has_buffered_input();
  }

  bool prepare_to_wait() override {
    if (step_ != Step::open) return true;
    std::error_code ec;
    if (bytes_within(options_.spin_before_sleep)) return false;
    if (!reader_.ask_for_doorbell(ec)) return false;  // bytes (or the end, or a corrupt ring) came meanwhile
    asked_for_doorbell_ = true;
    return true;
  }

  void shutdown_send() override {
    if (step_ != Step::open) return;
    writer_.close();
    if (writer_.reader_needs_doorbell()) ring_doorbell(fd_);
  }

  std::string describe() const override {
    return fmt::format("shared memory, {} KiB rings", capacity_ / 1024);
  }

 private:
  enum class Step { offer, await_answer, await_offer, answer, open };

  bool make_region(boost::system::error_code& ec) {
    if (!shm::valid_capacity(options_.ring_bytes)) {
      ec = asio::error::invalid_argument;
      return false;
    }
    capacity_ = options_.ring_bytes;
    region_size_ = shm::region_size(capacity_);
    memfd_ = ::memfd_create("volley-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int pair[2] = {-1, -1};
    if (memfd_ < 0 || ::ftruncate(memfd_, static_cast<off_t>(region_size_)) != 0 ||
        ::fcntl(memfd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
      ec = errno_error();
      return false;
    }
    room_ = pair[0];
    peer_room_ = pair[1];
    void* at = ::mmap(nullptr, region_size_, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
    if (at == MAP_FAILED) {
      ec = errno_error();
      return false;
    }
    region_ = static_cast<std::byte*>(at);
    shm::format_region({region_, region_size_}, capacity_);
    return true;
  }

  // False with `ec` clear: the socket is full, try again when writable.
  bool send_offer(boost::system::error_code& ec) {
    OneByteMessage<2> m(kOffer);
    msghdr& message = m.header;
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    const int fds[2] = {memfd_, peer_room_};
    std::memcpy(CMSG_DATA(c), fds, sizeof fds);
    if (::sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
      if (!would_block_now(errno)) ec = errno_error();
      return false;
    }
    // The peer has its own copies now.
    ::close(memfd_);
    ::close(peer_room_);
    memfd_ = peer_room_ = -1;
    return true;
  }

  // The client's offer: one byte, the region and the room doorbell, checked
  // before anything is mapped. False with `ec` clear: not here yet.
  bool take_offer(boost::system::error_code& ec) {
    OneByteMessage<4> m(0);  // room for more descriptors than an offer has: extra ones are seen and refused
    msghdr& message = m.header;
    const char& offer = m.byte;
    const ssize_t n = ::recvmsg(fd_, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (!would_block_now(errno)) ec = errno_error();
      return false;
    }
    if (n == 0) {
      ec = asio::error::eof;
      return false;
    }
    std::vector<int> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.push_back(fd);
      }
    }
    const bool shaped = offer == kOffer && fds.size() == 2 && (message.msg_flags & MSG_CTRUNC) == 0;
    if (shaped) {
      memfd_ = fds[0];
      room_ = fds[1];
    } else {
      for (int fd : fds) ::close(fd);
    }
    if (!shaped || !map_offered_region() || !is_socket(room_)) {
      ec = wire::Errc::corrupt_ring;
      return false;
    }
    ::close(memfd_);
    memfd_ = -1;
    return true;
  }

  // The offered memfd: sealed against shrinking (else the client could cut
  // it under our mapping, and a read there would be SIGBUS), of a size the
  // header agrees with.
  bool map_offered_region() {
    struct stat st{};
    if (::fstat(memfd_, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    const int seals = ::fcntl(memfd_, F_GET_SEALS);
    if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) return false;
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size < shm::region_size(shm::kMinCapacity) || size > shm::region_size(shm::kMaxCapacity)) return false;
    void* at = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd_, 0);
    if (at == MAP_FAILED) return false;
    region_ = static_cast<std::byte*>(at);
    region_size_ = size;
    std::error_code ec;
    capacity_ = shm::check_region({region_, region_size_}, ec);
    return !ec;
  }

  static bool is_socket(int fd) {
    struct stat st{};
    return fd >= 0 && ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
  }

  // False with `ec` clear: nothing yet.
  bool receive_byte(char& byte, boost::system::error_code& ec) {
    const ssize_t n = ::recv(fd_, &byte, 1, MSG_DONTWAIT);
    if (n == 1) return true;
    if (n == 0) ec = asio::error::eof;
    else if (!would_block_now(errno)) ec = errno_error();
    return false;
  }

  Wait open_rings() {
    const std::span<std::byte> region{region_, region_size_};
    const int mine = role_ == ShmRole::client ? 0 : 1;
    writer_ = wire::ShmRingWriter(shm::ring_of(region, capacity_, mine), capacity_);
    reader_ = wire::ShmRingReader(shm::ring_of(region, capacity_, 1 - mine), capacity_);
    step_ = Step::open;
    return Wait::none;
  }

  // Looks at the ring for up to `spin`: true as soon as bytes (or the end,
  // or a corrupt index) are there to read.
  bool bytes_within(std::chrono::nanoseconds spin) const {
    if (spin.count() <= 0) return false;
    const auto until = std::chrono::steady_clock::now() + spin;
    std::error_code ec;
    do {
      for (int i = 0; i < 64; ++i)
        if (reader_.readable(ec) > 0 || ec || reader_.writer_closed()) return true;
    } while (std::chrono::steady_clock::now() < until);
    return false;
  }

  // Takes the doorbells waiting on the socket, and notes its end.
  void look_at_socket() {
    std::array<char, 256> bells;
    for (;;) {
      const ssize_t n = ::recv(fd_, bells.data(), bells.size(), MSG_DONTWAIT);
      if (n > 0) continue;
      if (n == 0) input_ended_ = true;
      else if (!would_block_now(errno)) socket_error_ = errno_error();
      return;
    }
  }

  void take_room_doorbells() {
    std::array<char, 256> bells;
    for (;;) {
      const ssize_t n = ::recv(room_, bells.data(), bells.size(), MSG_DONTWAIT);
      if (n > 0) continue;
      if (n == 0 || !would_block_now(errno)) peer_gone_ = true;  // the peer's end of the pair closed: it died or finished
      return;
    }
  }

  const ShmRole role_;
  const ShmOptions options_;
  Step step_;
  int fd_ = -1;              // the connection's socket: the set-up, data doorbells, the end
  int memfd_ = -1;           // until the offer is sent (client) or mapped (server)
  int room_ = -1;            // this side's end of the room doorbell pair
  int peer_room_ = -1;       // the client's, until sent
  std::byte* region_ = nullptr;
  std::size_t region_size_ = 0;
  std::size_t capacity_ = 0;
  wire::ShmRingWriter writer_;
  wire::ShmRingReader reader_;
  Wait blocked_ = Wait::none;
  bool asked_for_doorbell_ = false;  // the reader sleeps until a doorbell (or the end)
  bool waiting_for_room_ = false;    // the writer sleeps until a room doorbell
  bool built_in_place_ = false;      // bytes committed in the ring, not yet published
  bool input_ended_ = false;         // the socket's end: the peer closed or died
  bool peer_gone_ = false;           // the room pair's end: writes cannot be read any more
  boost::system::error_code socket_error_;
  unsigned empty_reads_ = 0;
  unsigned empty_looks_ = 0;
};

}  // namespace

std::unique_ptr<StreamTransport> make_shm_transport(ShmRole role, ShmOptions options) {
  return std::make_unique<ShmTransport>(role, options);
}

}  // namespace volley::net
