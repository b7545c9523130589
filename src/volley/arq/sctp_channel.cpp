#include <volley/arq/sctp_channel.hpp>

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <usrsctp.h>

#include <volley/arq/error.hpp>
#include <volley/net/udp_drops.hpp>

#include <volley/net/close_without_cancel.hpp>

namespace volley::arq {

namespace asio = boost::asio;
using asio::ip::udp;

namespace {

// libusrsctp's stack is process-wide: this flag turns a second channel into
// an exception instead of two owners of one stack.
std::atomic<bool>& stack_taken() {
  static std::atomic<bool> taken{false};
  return taken;
}

constexpr std::uint16_t kSctpPort = 5000;  // the association's port inside the tunnel (both ends)
constexpr auto kTick = std::chrono::milliseconds(10);
constexpr std::size_t kMaxQueued = 65536;  // messages held while the association comes up or the buffer is full

// The last packet of SCTP's shutdown handshake can be lost, and whoever sends
// it cannot know. So each end also stops waiting for the handshake on a
// bound, once what it must know is known:
// - the end that received SHUTDOWN has all its peer sent; it keeps answering
//   (a lost SHUTDOWN-ACK brings the SHUTDOWN again after the peer's
//   retransmission timeout, one second or more) until SHUTDOWN-COMPLETE, or
//   until the peer was quiet this long;
constexpr auto kResponderQuiet = std::chrono::seconds(3);
// - the end that sent SHUTDOWN knows from the acknowledgements that all it
//   sent arrived; it retransmits SHUTDOWN until SHUTDOWN-ACK, or this long,
//   so that several copies (1, 2, 4, 8 s apart) reach a peer still waiting.
constexpr auto kInitiatorWait = std::chrono::seconds(20);

}  // namespace

struct SctpChannel::State {
  State(const asio::any_io_executor& executor, udp::socket s, std::optional<udp::endpoint> p, MessageHandler handler)
      : socket(std::move(s)),
        timer(executor),
        peer(p),
        on_message(std::move(handler)),
        buffer(65536),
        message_buffer(65536) {}

  udp::socket socket;
  asio::steady_timer timer;
  std::optional<udp::endpoint> peer;
  MessageHandler on_message;
  Done close_done, peer_done, connected;
  struct socket* listener = nullptr;
  struct socket* association = nullptr;  // the connected socket (client) or the accepted one
  bool up = false;
  bool closing = false;
  bool shut_down = false;  // our side sent SHUTDOWN
  bool peer_finished = false;  // the peer's SHUTDOWN arrived: everything it sent is here
  bool acknowledged_in_shutdown = false;  // once shutting down, everything we sent was acknowledged
  bool association_done = false;  // SHUTDOWN-COMPLETE, or the bound above passed
  bool stopped = false;
  std::chrono::steady_clock::time_point shutdown_sent_at, peer_heard_at;
  std::deque<std::vector<std::byte>> queued;
  std::vector<std::byte> buffer;          // datagrams in
  std::vector<std::byte> message_buffer;  // SCTP messages out of the stack
  std::vector<std::byte> partial;         // a message longer than one read
  udp::endpoint from;
  std::chrono::steady_clock::time_point last_tick = std::chrono::steady_clock::now();
  SctpStats stats;
  std::uint64_t kernel_drops = 0;
  std::error_code error;

  static int output(void* address, void* packet, std::size_t length, std::uint8_t, std::uint8_t) {
    auto* self = static_cast<State*>(address);
    if (!self->peer || self->stopped) return 0;
    boost::system::error_code ec;
    self->socket.send_to(asio::buffer(packet, length), *self->peer, 0, ec);
    if (!ec) {
      self->stats.datagrams_sent += 1;
      self->stats.bytes_sent += length;
    }
    return 0;  // a failed send is a loss, which SCTP recovers
  }

  sockaddr_conn address() {
    sockaddr_conn a{};
    a.sconn_family = AF_CONN;
    a.sconn_port = htons(kSctpPort);
    a.sconn_addr = this;
    return a;
  }

  struct socket* open_socket() {
    struct socket* s = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, nullptr, nullptr, 0, nullptr);
    if (s == nullptr) throw std::runtime_error(std::string("SCTP socket: ") + std::strerror(errno));
    configure(s);
    sockaddr_conn a = address();
    if (usrsctp_bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error(std::string("SCTP bind: ") + std::strerror(errno));
    return s;
  }

  static void configure(struct socket* s) {
    usrsctp_set_non_blocking(s, 1);
    const int on = 1;
    usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on);  // a message goes out when sent
    for (const std::uint16_t type : {SCTP_ASSOC_CHANGE, SCTP_SHUTDOWN_EVENT}) {
      sctp_event event{};
      event.se_assoc_id = SCTP_ALL_ASSOC;
      event.se_type = type;
      event.se_on = 1;
      usrsctp_setsockopt(s, IPPROTO_SCTP, SCTP_EVENT, &event, sizeof event);
    }
  }

  // Nothing of ours waits to be sent or acknowledged.
  bool all_acknowledged() {
    if (!queued.empty()) return false;
    if (association == nullptr) return true;
    sctp_status status{};
    socklen_t length = sizeof status;
    if (usrsctp_getsockopt(association, IPPROTO_SCTP, SCTP_STATUS, &status, &length) != 0) return false;
    return status.sstat_unackdata == 0 && status.sstat_penddata == 0;
  }

  void fail(const std::error_code& why) {
    if (!error) error = why;
    if (connected) std::exchange(connected, nullptr)(error);
    finish_close();
    if (peer_done) std::exchange(peer_done, nullptr)(error);
  }

  void finish_close() {
    if (close_done) std::exchange(close_done, nullptr)(error);
  }

  // The shutdown handshake is over, as far as this end can tell.
  void end_association() {
    if (association_done) return;
    association_done = true;
    finish_close();
    if (peer_finished && peer_done) std::exchange(peer_done, nullptr)({});
  }

  void on_peer_shutdown() {
    if (peer_finished) return;
    peer_finished = true;
    peer_heard_at = std::chrono::steady_clock::now();
  }

  // Called each tick: the bounds on waiting for the handshake's last packet.
  void check_shutdown_bounds() {
    if (association_done || error) return;
    // Nothing can be added once shutting down, so this stays true once it is.
    if ((shut_down || peer_finished) && !acknowledged_in_shutdown) acknowledged_in_shutdown = all_acknowledged();
    const auto now = std::chrono::steady_clock::now();
    if (peer_finished && now - peer_heard_at >= kResponderQuiet) return end_association();
    if (shut_down && now - shutdown_sent_at >= kInitiatorWait && all_acknowledged()) end_association();
  }

  void on_notification(const std::byte* data, std::size_t n) {
    sctp_notification note{};
    std::memcpy(&note, data, std::min(n, sizeof note));
    if (note.sn_header.sn_type == SCTP_SHUTDOWN_EVENT) return on_peer_shutdown();
    if (note.sn_header.sn_type != SCTP_ASSOC_CHANGE) return;
    switch (note.sn_assoc_change.sac_state) {
      case SCTP_COMM_UP:
      case SCTP_RESTART:
        up = true;
        if (connected) std::exchange(connected, nullptr)({});
        break;
      case SCTP_COMM_LOST:
        if ((shut_down || peer_finished) && acknowledged_in_shutdown) {
          // The handshake was cut short (an ABORT, seen once in CI under
          // load) after all we sent had been acknowledged: nothing is lost.
          stats.shutdown_aborts += 1;
          end_association();
          break;
        }
        fail(make_error_code(Errc::association_lost));
        break;
      case SCTP_CANT_STR_ASSOC:
        fail(make_error_code(Errc::association_failed));
        break;
      case SCTP_SHUTDOWN_COMP:
        end_association();
        break;
      default:
        break;
    }
  }

  void flush() {
    if (!up || association == nullptr) return;
    while (!queued.empty()) {
      const auto& m = queued.front();
      if (usrsctp_sendv(association, m.data(), m.size(), nullptr, 0, nullptr, 0, SCTP_SENDV_NOINFO, 0) < 0) {
        if (errno == EWOULDBLOCK || errno == EAGAIN) return;  // the send buffer is full: later
        fail(std::error_code(errno, std::system_category()));
        return;
      }
      stats.messages_sent += 1;
      queued.pop_front();
    }
    if (closing && !shut_down && !peer_finished) {  // after the peer's SHUTDOWN, the stack answers it
      shut_down = true;
      shutdown_sent_at = std::chrono::steady_clock::now();
      usrsctp_shutdown(association, SHUT_WR);  // SHUTDOWN once everything queued is acknowledged
    }
  }

  // Everything the stack has for us after an input or a timer.
  void pump() {
    if (stopped) return;
    if (listener != nullptr && association == nullptr) {
      association = usrsctp_accept(listener, nullptr, nullptr);
      if (association != nullptr) {
        configure(association);
        up = true;
      }
    }
    if (association == nullptr) return;
    for (;;) {
      int flags = 0;
      sctp_rcvinfo info{};
      socklen_t info_length = sizeof info;
      unsigned int info_type = 0;
      const ssize_t n = usrsctp_recvv(association, message_buffer.data(), message_buffer.size(), nullptr, nullptr,
                                      &info, &info_length, &info_type, &flags);
      if (n < 0) break;  // EWOULDBLOCK: nothing more now
      if (n == 0) {  // the association is gone (after the handshake, or the peer's abort)
        on_peer_shutdown();
        end_association();
        break;
      }
      const auto* data = message_buffer.data();
      if (flags & MSG_NOTIFICATION) {
        on_notification(data, static_cast<std::size_t>(n));
        continue;
      }
      partial.insert(partial.end(), data, data + n);
      if (flags & MSG_EOR) {
        stats.messages_received += 1;
        on_message(partial);
        partial.clear();
      }
    }
    flush();
  }

  // Waits for the socket to be readable, then reads what is there without
  // blocking. A wait, not a pending receive, because stop() ends it with a
  // shutdown (no cancel: net::close_without_cancel): a shut-down
  // unconnected UDP socket reports itself readable but has nothing to read, so
  // a receive would never complete, and on Asio's io_uring backend would poll
  // again at once, forever.
  void receive() {
    socket.async_wait(udp::socket::wait_read, [this](const boost::system::error_code& ec) {
      if (stopped || ec == asio::error::operation_aborted) return;
      on_readable();
    });
  }

  void on_readable() {
    constexpr int kBurst = 64;
    for (int i = 0; i < kBurst; ++i) {
      if (stopped) return;
      sockaddr_storage address{};
      socklen_t address_size = sizeof address;
      const ssize_t n = ::recvfrom(socket.native_handle(), buffer.data(), buffer.size(), MSG_DONTWAIT,
                                   reinterpret_cast<sockaddr*>(&address), &address_size);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return receive();
        if (errno == EINTR || errno == ECONNREFUSED) continue;  // an error reported for an earlier datagram
        return receive();  // anything else: wait again rather than spin on it
      }
      const bool ip = address_size <= from.capacity();  // always, on a UDP socket
      if (ip) {
        std::memcpy(from.data(), &address, address_size);
        from.resize(address_size);
      }
      if (ip && !peer && listener != nullptr) peer = from;
      if (!ip || !peer || from != *peer) {
        stats.foreign_datagrams += 1;
      } else {
        stats.datagrams_received += 1;
        peer_heard_at = std::chrono::steady_clock::now();  // the responder's quiet bound restarts
        usrsctp_conninput(this, buffer.data(), static_cast<std::size_t>(n), 0);
        pump();
      }
    }
    // More may be waiting: read on after the loop's other work.
    asio::post(socket.get_executor(), [this] {
      if (!stopped) on_readable();
    });
  }

  void tick() {
    timer.expires_after(kTick);
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopped) return;
      const auto now = std::chrono::steady_clock::now();
      const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_tick);
      last_tick += elapsed;
      usrsctp_handle_timers(static_cast<std::uint32_t>(elapsed.count()));
      pump();
      check_shutdown_bounds();
      tick();
    });
  }
};

SctpChannel::SctpChannel(const asio::any_io_executor& executor, udp::socket socket, std::optional<udp::endpoint> peer,
                         MessageHandler on_message) {
  if (socket.get_executor() != executor)
    throw std::invalid_argument("SctpChannel: the socket was made on another executor than the channel's");
  if (stack_taken().exchange(true))
    throw std::logic_error("one SctpChannel per process: libusrsctp keeps a single stack");
  state_ = std::make_unique<State>(executor, std::move(socket), peer, std::move(on_message));
  try {
    state_->socket.non_blocking(true);
    usrsctp_init_nothreads(0, &State::output, nullptr);  // port 0: no UDP socket of its own
    usrsctp_sysctl_set_sctp_ecn_enable(0);
    usrsctp_register_address(state_.get());
    struct socket* s = state_->open_socket();
    if (peer) {
      state_->association = s;
      sockaddr_conn a = state_->address();
      if (usrsctp_connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS)
        throw std::runtime_error(std::string("SCTP connect: ") + std::strerror(errno));
    } else {
      state_->listener = s;
      if (usrsctp_listen(s, 1) != 0) throw std::runtime_error(std::string("SCTP listen: ") + std::strerror(errno));
    }
  } catch (...) {
    stop();
    usrsctp_deregister_address(state_.get());
    usrsctp_finish();
    stack_taken() = false;
    throw;
  }
}

SctpChannel::~SctpChannel() {
  stop();
  usrsctp_deregister_address(state_.get());
  // Associations closed without their shutdown handshake linger in the stack
  // for a while; the process is about to let go of it either way.
  usrsctp_finish();
  stack_taken() = false;
}

void SctpChannel::start() {
  state_->receive();
  state_->tick();
}

void SctpChannel::on_ready(Done ready) {
  if (state_->up || state_->error) return ready(state_->error);
  state_->connected = std::move(ready);
}

bool SctpChannel::send(std::span<const std::byte> message) {
  if (state_->error || state_->closing || state_->queued.size() >= kMaxQueued) return false;
  state_->queued.emplace_back(message.begin(), message.end());
  state_->flush();
  return !state_->error;
}

void SctpChannel::close(Done done) {
  State& s = *state_;
  s.close_done = std::move(done);
  s.closing = true;
  // An SCTP shutdown closes both directions: once the peer shut down, nothing more can be sent.
  if (s.peer_finished && !s.queued.empty() && !s.error) s.error = make_error_code(Errc::unsent_at_peer_shutdown);
  if (s.error || s.association_done) return s.finish_close();
  s.flush();
}

void SctpChannel::on_peer_finished(Done done) {
  state_->peer_done = std::move(done);
  if (state_->peer_finished && state_->association_done) std::exchange(state_->peer_done, nullptr)({});
}

std::uint64_t SctpChannel::kernel_drops() const {
  State& s = *state_;
  if (s.socket.is_open()) s.kernel_drops = net::udp_receive_drops(s.socket.native_handle()).value_or(s.kernel_drops);
  return s.kernel_drops;
}

void SctpChannel::stop() {
  State& s = *state_;
  if (s.stopped) return;
  kernel_drops();  // the last count, before the socket goes
  s.stopped = true;
  s.timer.cancel();
  net::close_without_cancel(s.socket);  // the receive in flight ends and sees `stopped`
  if (s.association != nullptr) usrsctp_close(s.association);
  if (s.listener != nullptr) usrsctp_close(s.listener);
  s.association = s.listener = nullptr;
}

const SctpStats& SctpChannel::stats() const noexcept {
  sctpstat st{};
  usrsctp_get_stat(&st);
  state_->stats.retransmissions = st.sctps_sendretransdata;
  return state_->stats;
}

std::error_code SctpChannel::error() const { return state_->error; }

udp::endpoint SctpChannel::local_endpoint() const { return state_->socket.local_endpoint(); }

}  // namespace volley::arq
