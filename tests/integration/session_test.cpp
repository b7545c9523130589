// Sessions in process over loopback: heartbeats both ways, reconnection with
// the outbox, backpressure, even spreading over workers, graceful close.
#include <net/if.h>
#include <poll.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/session.hpp>
#include <volley/net/tcp_connect.hpp>
#include <volley/net/tls.hpp>
#include <volley/net/server.hpp>
#include <volley/wire/checked.hpp>

#include "child_process.hpp"
#include "framings.hpp"
#include "links.hpp"
#include "listening_server.hpp"
#include "run_until.hpp"
#include "server_thread.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace asio = boost::asio;


// A loopback listener that accepts (in the kernel) and then does nothing: never
// sends, and never reads unless told to.
class SilentPeer {
 public:
  explicit SilentPeer(int receive_buffer = 0) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0) ::setsockopt(listen_fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_fd_, 16);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~SilentPeer() {
    if (fd_ >= 0) ::close(fd_);
    ::close(listen_fd_);
  }
  std::uint16_t port() const { return port_; }
  int fd() const { return fd_; }
  int accept() {
    fd_ = ::accept(listen_fd_, nullptr, nullptr);
    return fd_;
  }
  // Without blocking: a connection waits to be accepted; the accepted one has input.
  bool connection_waiting() const { return readable(listen_fd_); }
  bool input_waiting() const { return fd_ >= 0 && readable(fd_); }
  // Reads and discards whatever is there, without blocking.
  std::size_t drain() {
    std::size_t total = 0;
    std::byte buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) return total;
      total += static_cast<std::size_t>(n);
    }
  }

 private:
  static bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
  }

  int listen_fd_ = -1;
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

net::ReconnectingClientOptions client_options(std::uint16_t port) {
  net::ReconnectingClientOptions o;
  o.port = port;
  o.make_codec = [] { return net::make_checked_codec(1 << 20); };
  o.backoff = {20ms, 200ms, 2.0, 0.2};
  return o;
}


TEST(Session, ClientDetectsASilentServerAfterIntervalTimesMisses) {
  SilentPeer server;
  asio::io_context loop;
  auto o = client_options(server.port());
  o.session.heartbeat_interval = 200ms;
  o.session.heartbeat_misses = 2;
  Clock::time_point disconnected_at{};
  bool connected = false;
  net::CloseReason reason;
  net::ReconnectingClient client(loop, o,
                                 {.on_open = [&] { connected = true; },
                                  .on_close =
                                      [&](const net::CloseReason& r) {
                                        if (disconnected_at == Clock::time_point{}) {
                                          disconnected_at = Clock::now();
                                          reason = r;
                                        }
                                      }});
  // Before the start: the session's silence clock starts when it opens, a
  // moment before on_open runs, so a clock read there starts late.
  const auto start = Clock::now();
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return disconnected_at != Clock::time_point{}; }, 5s));
  client.stop();
  EXPECT_TRUE(connected);
  EXPECT_EQ(reason.kind, net::CloseReason::Kind::heartbeat_timeout) << reason.detail;
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(disconnected_at - start).count();
  EXPECT_GE(elapsed, 400);   // interval x misses after the session opened, which is after the start
  EXPECT_LE(elapsed, 2000);  // the exact moment is tested on a virtual clock (SessionPolicy.*)
}

// With nothing listening on a local port and that port the only ephemeral one,
// connect() binds the socket to it and TCP's simultaneous open connects the
// socket to itself. Run in a child process, in a network namespace of its own
// (198.18.0.0/15 is not needed: loopback alone) where the ephemeral range is
// that one port. Exit codes: 0 refused as a failed attempt, 1 taken for a
// session, 2 nothing happened, 10+ no namespace to be had.
int connect_to_itself_in_a_namespace() {
  if (::unshare(CLONE_NEWNET) != 0) return 10;
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  ifreq lo{};
  std::strcpy(lo.ifr_name, "lo");
  if (fd < 0 || ::ioctl(fd, SIOCGIFFLAGS, &lo) != 0) return 11;
  lo.ifr_flags |= IFF_UP;
  if (::ioctl(fd, SIOCSIFFLAGS, &lo) != 0) return 12;
  ::close(fd);
  constexpr std::uint16_t kPort = 40000;
  std::ofstream("/proc/sys/net/ipv4/ip_local_port_range") << kPort << ' ' << kPort << '\n';
  if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range"); !(range >> std::ws) || range.peek() != '4') return 13;
  asio::io_context loop;
  auto o = client_options(kPort);
  o.backoff = {10ms, 20ms, 2.0, 0.2};
  int connected = 0;
  bool itself = false;
  net::ReconnectingClient client(loop, o,
                                 {.on_open = [&] { ++connected; },
                                  .on_connect_failed =
                                      [&](const std::error_code& error, std::chrono::milliseconds) {
                                        itself = itself || error == std::errc::connection_refused;
                                      }});
  client.start();
  run_until(loop, [&] { return connected > 0 || client.stats().failed_attempts >= 3; }, 5s);
  client.stop();
  if (connected > 0) return 1;
  return itself && client.stats().failed_attempts >= 3 ? 0 : 2;
}

TEST(ReconnectingClient, AConnectionToItselfIsAFailedAttemptNotASession) {
  if (::geteuid() != 0) GTEST_SKIP() << "a network namespace needs root";
  const pid_t child = ::fork();
  if (child == 0) ::_exit(connect_to_itself_in_a_namespace());  // no gtest teardown in the child
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) >= 10) GTEST_SKIP() << "no network namespace here (step " << WEXITSTATUS(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << (WEXITSTATUS(status) == 1 ? "the client took a connection to itself for its server"
                                                                   : "no attempt connected to itself");
}

// A connect that gets no answer (a listener whose accept queue is full: the
// kernel drops further SYNs) ends at the connect timeout and is retried, and
// stop() leaves the loop nothing to do. The timeout closes the connecting
// socket with a shutdown, not Asio's cancel (the io_uring build's sanitizer
// stage runs this too), so the reason comes from the client's own flag.
TEST(ReconnectingClient, AConnectNobodyAnswersTimesOutAndIsTriedAgain) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 0), 0);  // a queue of one
  socklen_t size = sizeof address;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size), 0);
  const int filler = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(filler, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);  // never accepted

  asio::io_context loop;
  auto o = client_options(ntohs(address.sin_port));
  o.connect_timeout = 200ms;
  int connected = 0;
  std::vector<std::error_code> reasons;
  net::ReconnectingClient client(loop, o,
                                 {.on_open = [&] { ++connected; },
                                  .on_connect_failed = [&](const std::error_code& why, std::chrono::milliseconds) {
                                    reasons.push_back(why);
                                  }});
  client.start();
  EXPECT_TRUE(run_until(loop, [&] { return reasons.size() >= 2; }, 10s));
  client.stop();
  EXPECT_TRUE(run_bounded(loop, 10s)) << "work was left on the loop after stop()";
  ::close(filler);
  ::close(listener);
  EXPECT_EQ(connected, 0);
  ASSERT_FALSE(reasons.empty());
  for (const auto& why : reasons) EXPECT_EQ(why, std::errc::timed_out) << why.message();
  EXPECT_EQ(client.stats().failed_attempts, reasons.size());
}

// stop() while the TLS handshake is under way (the server accepted and never
// answers): the connection ends at once instead of finishing the handshake
// and staying open; the message waiting in the outbox is counted as
// dropped; no disconnect is reported for a session that never opened.
TEST(ReconnectingClient, AStopDuringTheTlsHandshakeEndsAtOnceAndCountsWhatTheOutboxHeld) {
  SilentPeer server;
  asio::io_context loop;
  auto context = net::make_tls_client_context({}, /*verify=*/false, net::TlsVersion::any);
  auto o = client_options(server.port());
  o.make_transport = [&context] { return net::make_tls_transport(context, net::TlsRole::client); };
  o.connect_timeout = 10s;  // the handshake would wait this long
  int connected = 0, disconnected = 0;
  net::ReconnectingClient client(loop, o,
                                 {.on_open = [&] { ++connected; },
                                  .on_close = [&](const net::CloseReason&) { ++disconnected; }});
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return server.connection_waiting(); }, 5s));
  ASSERT_GE(server.accept(), 0);
  ASSERT_TRUE(run_until(loop, [&] { return server.input_waiting(); }, 5s));  // the ClientHello: mid-handshake
  const std::string text = "never sent";
  EXPECT_EQ(client.send(std::as_bytes(std::span(text))), net::SendResult::queued);
  const auto start = Clock::now();
  client.stop();
  run_bounded(loop, 5s);  // returns when the client has nothing left to do
  EXPECT_LT(Clock::now() - start, 2s) << "the stop waited for the handshake";
  EXPECT_EQ(client.stats().outbox_dropped, 1u);
  EXPECT_EQ(client.outbox_messages(), 0u);
  EXPECT_EQ(connected, 0);
  EXPECT_EQ(disconnected, 0);
  EXPECT_EQ(client.stats().disconnects, 0u);
}

// The tests below run for every framing (checked, gNB, RPC) over plain TCP and over TLS alike.
class SessionOver : public FramingAndLink {
 protected:
  net::ReconnectingClientOptions options(int port) const {
    auto o = client_options(static_cast<std::uint16_t>(port));
    o.host = host();
    o.make_codec = [f = framing()] { return make_codec(f); };
    o.make_transport = client_transport(link());
    return o;
  }
};
INSTANTIATE_TEST_SUITE_P(Sessions, SessionOver, every_framing_and_link(), over_name);

TEST_P(SessionOver, HeartbeatsKeepAnIdleSessionAliveBothWays) {
  TempDir dir;
  RunningPingPongServer server(dir, server_args({"--heartbeat-ms", "100", "--heartbeat-misses", "2"}));
  asio::io_context loop;
  auto o = options(server.port());
  o.session.heartbeat_interval = 100ms;
  o.session.heartbeat_misses = 2;
  int disconnects = 0;
  net::ReconnectingClient client(loop, o, {.on_close = [&](const net::CloseReason&) { ++disconnects; }});
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return client.connected(); }, 5s));
  run_until(loop, [] { return false; }, 1000ms);  // ten intervals of silence but for heartbeats
  EXPECT_TRUE(client.connected());
  EXPECT_EQ(disconnects, 0);
  ASSERT_NE(client.session(), nullptr);
  EXPECT_GE(client.session()->stats().heartbeats_in, 5u);
  EXPECT_GE(client.session()->stats().heartbeats_out, 5u);
  EXPECT_EQ(client.session()->stats().messages_in, 0u);
  client.stop();
  run_until(loop, [&] { return !client.connected(); }, 5s);
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report.at("closes").as_object(), "heartbeat timeout"), 0u);
}

TEST_P(SessionOver, ReconnectsAndDeliversTheOutboxExactlyOnceInOrder) {
  TempDir dir;
  auto server = std::make_unique<RunningPingPongServer>(dir, server_args({}), 0, "server-1");
  const int port = server->port();
  asio::io_context loop;
  auto o = options(port);
  o.outbox_messages = 300;
  int connects = 0, disconnects = 0, failures = 0;
  std::vector<std::string> echoes;
  net::ReconnectingClient client(
      loop, o,
      {.on_open = [&] { ++connects; },
       .on_message = [&](const net::Message& m) { echoes.push_back(text_of(framing(), m.bytes)); },
       .on_close = [&](const net::CloseReason&) { ++disconnects; },
       .on_connect_failed = [&](const std::error_code&, std::chrono::milliseconds) { ++failures; }});
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return client.connected(); }, 5s));
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(client.send(message(framing(), "before " + std::to_string(i))), net::SendResult::sent);
  ASSERT_TRUE(run_until(loop, [&] { return echoes.size() == 10; }, 5s));

  server->process().send_signal(SIGKILL);
  server->process().wait_for(5s);
  ASSERT_TRUE(run_until(loop, [&] { return disconnects == 1; }, 5s));
  // While the server is away every message goes to the outbox, up to its bound.
  for (int i = 0; i < 300; ++i)
    ASSERT_EQ(client.send(message(framing(), "during " + std::to_string(i))), net::SendResult::queued) << i;
  EXPECT_EQ(client.send(message(framing(), "one too many")), net::SendResult::outbox_full);
  EXPECT_EQ(client.outbox_messages(), 300u);
  run_until(loop, [&] { return failures >= 2; }, 5s);  // it keeps trying, backing off
  EXPECT_GE(failures, 2);

  server = std::make_unique<RunningPingPongServer>(dir, server_args({}), port, "server-2");
  ASSERT_EQ(server->port(), port);
  ASSERT_TRUE(run_until(loop, [&] { return echoes.size() >= 310; }, 10s)) << echoes.size();
  run_until(loop, [] { return false; }, 200ms);  // anything extra would show up now
  ASSERT_EQ(echoes.size(), 310u);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(echoes[10 + i], "during " + std::to_string(i));
  EXPECT_EQ(connects, 2);
  EXPECT_EQ(client.outbox_messages(), 0u);
  EXPECT_EQ(client.stats().outbox_refusals, 1u);
  client.stop();
  run_until(loop, [&] { return !client.connected(); }, 5s);
  EXPECT_EQ(json_u64(server->stop(), "messages_in"), 300u);
}

// The ping-pong server echoes payloads from 64 KiB with send_received(): from
// its input buffer, not copied. The client sends about 20 MB at once, large
// and small messages alternating, and reads nothing for a while: the server's
// echoes back up while more input waits for it, and any read into its input
// buffer before a lent payload has left would change an echo.
TEST_P(SessionOver, LargeEchoesLeaveFromTheInputBufferIntactAndInOrder) {
  TempDir dir;
  RunningPingPongServer server(dir, server_args({}));
  asio::io_context loop;
  // A gNB data body is at most 64 KiB: its largest frame is just over the server's threshold.
  const std::size_t large = framing() == Framing::gnb ? gnb::kMaxBodyLength : 900 * 1024;
  const int messages = static_cast<int>(2 * ((20u << 20) / large));
  const auto text = [&](int i) {
    std::string t = "message " + std::to_string(i) + " ";
    const std::size_t size = i % 2 == 0 ? large : 100;
    while (t.size() < size) t.push_back(static_cast<char>('a' + (t.size() * 7 + static_cast<std::size_t>(i)) % 26));
    t.resize(size);
    return t;
  };
  int echoed = 0, wrong = 0;
  auto o = options(server.port());
  o.connection_limits.high_water = 64u << 20;  // everything is queued at once
  net::ReconnectingClient client(loop, o,
                                 {.on_message = [&](const net::Message& m) {
                                    if (text_of(framing(), m.bytes) != text(echoed)) ++wrong;
                                    ++echoed;
                                  }});
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return client.connected(); }, 5s));
  client.session()->pause_input();
  for (int i = 0; i < messages; ++i) ASSERT_EQ(client.send(message(framing(), text(i))), net::SendResult::sent) << i;
  run_until(loop, [] { return false; }, 300ms);
  EXPECT_EQ(echoed, 0);
  client.session()->resume_input();
  ASSERT_TRUE(run_until(loop, [&] { return echoed == messages; }, 30s)) << echoed << " of " << messages;
  EXPECT_EQ(wrong, 0);
  client.stop();
  run_until(loop, [&] { return !client.connected(); }, 5s);
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "messages_in"), static_cast<std::uint64_t>(messages));
}

// A reconnecting client hears its connection fill and drain through the
// one callback struct, as it hears everything else.
TEST(Session, AReconnectingClientIsToldWhenItsConnectionFillsAndDrains) {
  SilentPeer server(64 * 1024);
  asio::io_context loop;
  auto o = client_options(server.port());
  o.connection_limits.high_water = 256 * 1024;
  std::vector<bool> events;
  net::ReconnectingClient client(loop, o, {.on_backpressure = [&](bool congested) { events.push_back(congested); }});
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return client.connected(); }, 5s));
  ASSERT_GE(server.accept(), 0);
  const std::vector<std::byte> chunk(4096, std::byte{'x'});
  for (int i = 0; i < 4096 && events.empty(); ++i) {
    ASSERT_NE(client.send(chunk), net::SendResult::outbox_full) << i;
    loop.poll();
  }
  ASSERT_EQ(events, std::vector<bool>{true}) << "the peer reads nothing: the output must fill";
  ASSERT_TRUE(run_until(loop, [&] {
    server.drain();
    return events.size() == 2;
  }, 10s));
  EXPECT_EQ(events, (std::vector<bool>{true, false}));
  client.stop();
}

TEST(Session, HighWaterBoundsTheQueueAndTellsTheWriter) {
  SilentPeer reader(64 * 1024);
  asio::io_context loop;
  std::error_code ec;
  auto socket = net::connect_tcp(loop, "127.0.0.1", reader.port(), 2s, ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_GE(reader.accept(), 0);

  struct Events : net::SessionEvents {
    int congested = 0, drained = 0;
    void on_message(net::Session&, const net::Message&) override {}
    void on_backpressure(net::Session&, bool c) override { ++(c ? congested : drained); }
  } events;
  net::SessionOptions options;
  options.heartbeat_interval = 0ms;
  const net::ConnectionLimits limits{.high_water = 256 * 1024};
  auto session = std::make_unique<net::Session>(net::make_checked_codec(1 << 20), options, events);
  net::Session& s = *session;
  auto connection = std::make_shared<net::TcpConnection>(std::move(socket), std::move(session), limits);
  connection->start();

  const std::vector<std::byte> payload(16 * 1024, std::byte{0x5A});
  std::size_t peak = 0;
  // The reader never reads: the kernel's buffers fill (they grow as the writer
  // pushes), then ours, up to high water and no further.
  const auto fill = [&] {
    for (int i = 0; i < 100000 && !s.congested(); ++i) {
      s.send(payload);
      peak = std::max(peak, s.queued_bytes());
      loop.poll();
    }
  };
  for (int round = 0; round < 100; ++round) {
    fill();
    run_bounded(loop, 20ms);  // still congested after the kernel had its chance: it is full
    if (s.congested()) break;
  }
  ASSERT_TRUE(s.congested());
  EXPECT_EQ(events.congested, events.drained + 1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.send(payload), net::SendResult::high_water);
  EXPECT_EQ(s.stats().refused_sends, 100u);
  EXPECT_LE(peak, limits.high_water + payload.size() + 5);
  EXPECT_GE(peak, limits.high_water);
  EXPECT_LE(s.queued_bytes(), limits.high_water + payload.size() + 5);
  const int drained_before = events.drained;

  // Once the reader reads, the queue drains to low water and the writer is told.
  ASSERT_TRUE(run_until(loop, [&] { reader.drain(); return events.drained == drained_before + 1; }, 10s));
  EXPECT_FALSE(s.congested());
  EXPECT_EQ(s.send(payload), net::SendResult::sent);
  connection->abort({});
}

// Records the close; pauses input on congestion when asked.
struct RecordingEvents : net::SessionEvents {
  bool pause_when_congested = false;
  std::optional<net::CloseReason> closed;
  void on_message(net::Session&, const net::Message&) override {}
  void on_backpressure(net::Session& s, bool congested) override {
    if (congested && pause_when_congested) s.pause_input();
  }
  void on_close(net::Session&, const net::CloseReason& r) override { closed = r; }
};

// Connects a checked-frame session to `peer` and sends 16 KiB messages until
// it is congested (the peer reads nothing); null if it never was.
// `each_turn` runs once per send while the output fills (a peer that talks while it does not read).
std::shared_ptr<net::TcpConnection> start_congested(asio::io_context& loop, SilentPeer& peer,
                                                    const net::SessionOptions& options,
                                                    const net::ConnectionLimits& limits, net::SessionEvents& events,
                                                    const std::function<void()>& each_turn = {}) {
  std::error_code ec;
  auto socket = net::connect_tcp(loop, "127.0.0.1", peer.port(), 2s, ec);
  if (ec || peer.accept() < 0) return nullptr;
  auto session = std::make_unique<net::Session>(net::make_checked_codec(1 << 20), options, events);
  net::Session& s = *session;
  auto connection = std::make_shared<net::TcpConnection>(std::move(socket), std::move(session), limits);
  connection->start();
  const std::vector<std::byte> payload(16 * 1024, std::byte{1});
  for (int i = 0; i < 10000 && !s.congested(); ++i) {
    s.send(payload);
    if (each_turn) each_turn();
    loop.poll();
  }
  return s.congested() ? connection : nullptr;
}

// A sender that lends its buffers (send_framed, Buffer::lent) reuses them when
// on_written says they left, so that count must hold its own bytes only: the
// heartbeats a quiet session sends in between are not the caller's.
TEST(Session, WrittenReportsCountTheCallersBytesNotTheHeartbeats) {
  SilentPeer peer;
  asio::io_context loop;
  struct Counting : net::SessionEvents {
    std::size_t written = 0;
    void on_message(net::Session&, const net::Message&) override {}
    void on_written(net::Session&, std::size_t bytes) override { written += bytes; }
  } events;
  net::SessionOptions options;
  options.heartbeat_interval = 20ms;
  options.heartbeat_misses = 1000;  // the peer never talks; this test is not about that
  std::error_code ec;
  auto socket = net::connect_tcp(loop, "127.0.0.1", peer.port(), 2s, ec);
  ASSERT_FALSE(ec);
  ASSERT_GE(peer.accept(), 0);
  auto owned = std::make_unique<net::Session>(net::make_checked_codec(1024), options, events);
  net::Session& s = *owned;
  auto connection = std::make_shared<net::TcpConnection>(std::move(socket), std::move(owned));
  connection->start();
  std::size_t received = 0;
  // Quiet: heartbeats go out.
  ASSERT_TRUE(run_until(loop, [&] { received += peer.drain(); return s.stats().heartbeats_out >= 3; }, 5s));
  // Three checked frames framed by the caller, lent; then one message framed by the session.
  std::vector<std::byte> block;
  for (int i = 0; i < 3; ++i) {
    const std::vector<std::byte> payload(100 + static_cast<std::size_t>(i), std::byte{0x5a});
    std::vector<std::byte> frame(5 + payload.size());
    std::error_code frame_error;
    ASSERT_EQ(wire::checked::encode(wire::checked::FrameType::message, payload, frame, frame_error), frame.size());
    block.insert(block.end(), frame.begin(), frame.end());
  }
  ASSERT_EQ(s.send_framed(block, 3, net::Session::Buffer::lent), net::SendResult::sent);
  const std::vector<std::byte> message(50, std::byte{1});
  ASSERT_EQ(s.send(message), net::SendResult::sent);
  const std::size_t ours = block.size() + 5 + message.size();
  // And quiet again: more heartbeats after our bytes.
  const auto heartbeats_before = s.stats().heartbeats_out;
  ASSERT_TRUE(run_until(loop, [&] {
    received += peer.drain();
    return s.stats().heartbeats_out >= heartbeats_before + 2 && s.queued_bytes() == 0;
  }, 5s));
  EXPECT_EQ(events.written, ours);
  EXPECT_EQ(s.stats().messages_out, 4u);
  received += peer.drain();
  EXPECT_EQ(received, ours + 5 * s.stats().heartbeats_out) << "the peer got our bytes and every heartbeat";
  connection->abort({});
}

// Each heartbeat that arrives is told to the events (for liveness monitors),
// once, and never as a message.
TEST(Session, EveryHeartbeatReceivedIsToldToTheEvents) {
  struct Counting : net::SessionEvents {
    std::atomic<std::uint64_t> heartbeats{0}, messages{0};
    std::atomic<std::uint64_t> counted_by_session{0};
    void on_message(net::Session&, const net::Message&) override { ++messages; }
    void on_heartbeat(net::Session& s) override {
      ++heartbeats;
      counted_by_session = s.stats().heartbeats_in;
    }
  };
  net::SessionOptions options;
  options.heartbeat_interval = 20ms;
  options.heartbeat_misses = 50;
  Counting server_events;
  net::Server server({.bind = "127.0.0.1", .port = 0, .threads = 1, .handle_signals = false});
  server.listen([&](std::size_t) -> std::unique_ptr<net::StreamHandler> {
    return std::make_unique<net::Session>(net::make_checked_codec(1024), options, server_events);
  });
  const auto port = server.port();
  ServerThread running(server);
  asio::io_context loop;
  std::error_code ec;
  auto socket = net::connect_tcp(loop, "127.0.0.1", port, 2s, ec);
  ASSERT_FALSE(ec);
  Counting client_events;
  auto owned = std::make_unique<net::Session>(net::make_checked_codec(1024), options, client_events);
  net::Session& s = *owned;
  auto connection = std::make_shared<net::TcpConnection>(std::move(socket), std::move(owned));
  connection->start();
  ASSERT_TRUE(run_until(loop, [&] { return client_events.heartbeats >= 5 && server_events.heartbeats >= 5; }, 5s));
  EXPECT_EQ(client_events.heartbeats.load(), s.stats().heartbeats_in);
  EXPECT_EQ(client_events.counted_by_session.load(), client_events.heartbeats.load());
  EXPECT_EQ(server_events.counted_by_session.load(), server_events.heartbeats.load());
  EXPECT_EQ(client_events.messages.load() + server_events.messages.load(), 0u);
  connection->close({net::CloseReason::Kind::local_close, {}});
  run_until(loop, [&] { return connection->closed(); }, 5s);
}

TEST(Session, SlowConsumerIsDisconnected) {
  SilentPeer reader(64 * 1024);
  asio::io_context loop;
  RecordingEvents events;
  net::SessionOptions options;
  options.heartbeat_interval = 0ms;
  const net::ConnectionLimits limits{.high_water = 128 * 1024, .slow_consumer_timeout = 300ms};
  const auto start = Clock::now();  // congestion begins after this
  const auto connection = start_congested(loop, reader, options, limits, events);
  ASSERT_TRUE(connection);
  ASSERT_TRUE(run_until(loop, [&] { return events.closed.has_value(); }, 5s));
  EXPECT_EQ(events.closed->kind, net::CloseReason::Kind::slow_consumer);
  EXPECT_GT(events.closed->unsent_bytes, 0u);  // reported, not silently dropped
  EXPECT_GE(Clock::now() - start, 300ms);
}

// A session that stops reading while its output is full stops hearing the
// peer; that silence is its own doing. It used to be reported as the peer's
// (heartbeat timeout) before the slow-consumer deadline could say what
// happened. It stops either way: its handler pauses its input, or the
// connection stops reading by itself (ConnectionLimits::stop_reading_when_full,
// as every server's connection does).
enum class StopsReading { handler_pauses, connection_stops };
class SlowConsumerNotSilent : public ::testing::TestWithParam<StopsReading> {};

TEST_P(SlowConsumerNotSilent, APeerThatTalksButNeverReadsIsReportedAsSlow) {
  SilentPeer peer(64 * 1024);
  asio::io_context loop;
  RecordingEvents events;
  events.pause_when_congested = GetParam() == StopsReading::handler_pauses;
  net::SessionOptions options;
  options.heartbeat_interval = 100ms;
  options.heartbeat_misses = 2;  // silence is noticed after 200 ms
  const net::ConnectionLimits limits{.high_water = 128 * 1024,
                                     .stop_reading_when_full = GetParam() == StopsReading::connection_stops,
                                     .slow_consumer_timeout = 1000ms};
  // The peer keeps talking (heartbeats) but never reads, from the start: while
  // the output fills (which can take longer than the silence bound under
  // ThreadSanitizer) the session hears it; once stopped, it does not.
  const std::array<std::byte, 5> heartbeat{std::byte{0}, std::byte{0}, std::byte{5}, std::byte{0}, std::byte{0}};
  const auto talk = [&] { ::send(peer.fd(), heartbeat.data(), heartbeat.size(), MSG_DONTWAIT | MSG_NOSIGNAL); };
  const auto connection = start_congested(loop, peer, options, limits, events, talk);
  ASSERT_TRUE(connection);
  ASSERT_TRUE(run_until(loop, [&] {
    talk();
    return events.closed.has_value();
  }, 5s));
  EXPECT_EQ(events.closed->kind, net::CloseReason::Kind::slow_consumer) << events.closed->detail;
}

INSTANTIATE_TEST_SUITE_P(Session, SlowConsumerNotSilent,
                         ::testing::Values(StopsReading::handler_pauses, StopsReading::connection_stops),
                         [](const auto& info) {
                           return info.param == StopsReading::handler_pauses ? "HandlerPauses" : "ConnectionStops";
                         });

TEST(Session, ConnectionsSpreadEvenlyOverWorkers) {
  net::Server server({.bind = "127.0.0.1", .port = 0, .threads = 3, .handle_signals = false});
  std::atomic<int> per_worker[3] = {0, 0, 0};
  struct Quiet : net::SessionEvents {
    void on_message(net::Session&, const net::Message&) override {}
  };
  net::SessionOptions options;
  options.heartbeat_interval = 0ms;
  server.listen([&](std::size_t w) -> std::unique_ptr<net::StreamHandler> {
    ++per_worker[w];
    return std::make_unique<net::Session>(net::make_checked_codec(1024), options, std::make_unique<Quiet>());
  });
  const auto port = server.port();
  asio::io_context client_loop;
  std::vector<asio::ip::tcp::socket> clients;
  ServerThread running(server);
  for (int i = 0; i < 12; ++i) {
    std::error_code ec;
    clients.push_back(net::connect_tcp(client_loop, "127.0.0.1", port, 2s, ec));
    ASSERT_FALSE(ec);
  }
  for (int i = 0; i < 500 && per_worker[0] + per_worker[1] + per_worker[2] < 12; ++i) std::this_thread::sleep_for(10ms);
  for (auto& n : per_worker) EXPECT_EQ(n.load(), 4);
  clients.clear();  // our FINs complete the server's graceful closes when `running` stops it
}

TEST(Session, GracefulCloseFlushesWhatWasQueued) {
  net::ServerOptions server_options{.bind = "127.0.0.1", .port = 0, .threads = 1, .handle_signals = false};
  server_options.connection_limits.high_water = 64 << 20;  // everything is queued at once
  net::Server server(server_options);
  constexpr std::size_t kMessages = 256, kSize = 32 * 1024;
  struct Sender : net::SessionEvents {
    void on_open(net::Session& s) override {
      const std::vector<std::byte> payload(kSize, std::byte{0x33});
      for (std::size_t i = 0; i < kMessages; ++i) ASSERT_EQ(s.send(payload), net::SendResult::sent);
      s.close();  // 8 MiB queued, far more than the socket takes at once
    }
    void on_message(net::Session&, const net::Message&) override {}
  };
  net::SessionOptions options;
  options.heartbeat_interval = 0ms;
  server.listen([&](std::size_t) -> std::unique_ptr<net::StreamHandler> {
    return std::make_unique<net::Session>(net::make_checked_codec(kSize), options, std::make_unique<Sender>());
  });
  const auto port = server.port();
  ServerThread running(server);
  asio::io_context client_loop;
  std::error_code ec;
  auto socket = net::connect_tcp(client_loop, "127.0.0.1", port, 2s, ec);
  ASSERT_FALSE(ec);
  socket.non_blocking(false);  // plain blocking reads below
  std::this_thread::sleep_for(200ms);  // let the server queue it all before anything is read
  std::size_t total = 0;
  std::vector<std::byte> buf(1 << 16);
  boost::system::error_code read_error;
  for (;;) {
    const std::size_t n = socket.read_some(asio::buffer(buf), read_error);
    if (read_error) break;
    total += n;
  }
  EXPECT_EQ(read_error, asio::error::eof);
  EXPECT_EQ(total, kMessages * (kSize + 5));
  socket.close();  // our FIN completes the server's graceful close
}

}  // namespace
}  // namespace volley::test
