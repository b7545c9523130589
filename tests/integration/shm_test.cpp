// Shared memory's untrusted peer: a client that offers a region the server
// cannot trust fails its handshake, one that corrupts its ring afterwards
// loses its connection with a counted error, and a good client beside them
// is served throughout. The hostile client here speaks the set-up by hand
// (docs/PROTOCOL.md, "Shared-memory rings").
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/shm.hpp>
#include <volley/net/unix_socket.hpp>
#include <volley/wire/shm_ring.hpp>

#include "child_process.hpp"
#include "framings.hpp"
#include "links.hpp"
#include "listening_server.hpp"
#include "run_until.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace shm = wire::shm;

constexpr std::size_t kCapacity = 64 * 1024;

// What to get wrong in an offer.
enum class Flaw { none, unsealed, bad_magic, short_file, no_descriptors };

// A client that makes its region and offer by hand; with Flaw::none it gets
// the server's answer and owns a working region it can then damage.
class HandMadeClient {
 public:
  HandMadeClient(const std::string& address, Flaw flaw) {
    std::error_code ec;
    fd_ = net::connect_unix(*net::parse_unix_address(address), ec);
    EXPECT_GE(fd_, 0) << ec.message();
    const int memfd = ::memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    size_ = flaw == Flaw::short_file ? shm::region_size(kCapacity) / 2 : shm::region_size(kCapacity);
    EXPECT_EQ(::ftruncate(memfd, static_cast<off_t>(size_)), 0);
    void* at = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    EXPECT_NE(at, MAP_FAILED);
    region_ = static_cast<std::byte*>(at);
    if (flaw != Flaw::short_file) shm::format_region({region_, size_}, kCapacity);
    if (flaw == Flaw::bad_magic) region_[0] ^= std::byte{1};
    if (flaw != Flaw::unsealed) {
      EXPECT_EQ(::fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    }
    int pair[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
    room_ = pair[0];
    char offer = 'O';
    iovec piece{&offer, 1};
    alignas(cmsghdr) std::array<unsigned char, CMSG_SPACE(2 * sizeof(int))> control{};
    msghdr message{};
    message.msg_iov = &piece;
    message.msg_iovlen = 1;
    if (flaw != Flaw::no_descriptors) {
      message.msg_control = control.data();
      message.msg_controllen = control.size();
      cmsghdr* c = CMSG_FIRSTHDR(&message);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(2 * sizeof(int));
      const int fds[2] = {memfd, pair[1]};
      std::memcpy(CMSG_DATA(c), fds, sizeof fds);
    }
    EXPECT_EQ(::sendmsg(fd_, &message, MSG_NOSIGNAL), 1);
    ::close(memfd);
    ::close(pair[1]);
    ::fcntl(fd_, F_SETFL, 0);  // blocking from here on
  }
  ~HandMadeClient() {
    if (region_ != nullptr) ::munmap(region_, size_);
    ::close(room_);
    ::close(fd_);
  }

  // The server's one-byte answer, or what it did instead: "closed" when it
  // closed the connection (an end, or a reset where input was left unread).
  std::string answer() {
    timeval wait{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    char byte = 0;
    const ssize_t n = ::recv(fd_, &byte, 1, 0);
    if (n == 1) return std::string(1, byte);
    if (n == 0 || errno == ECONNRESET) return "closed";
    return "error " + std::string(std::strerror(errno));
  }
  // Claims the client's ring holds more than it can, and rings the doorbell.
  void corrupt_write_index() {
    const wire::ShmRingControl control(shm::ring_of({region_, size_}, kCapacity, 0));
    *control.write_index = kCapacity + 1;
    const char bell = 'D';
    EXPECT_EQ(::send(fd_, &bell, 1, MSG_NOSIGNAL), 1);
  }

 private:
  int fd_ = -1;
  int room_ = -1;
  std::byte* region_ = nullptr;
  std::size_t size_ = 0;
};

// A good shared-memory client: ten checked messages there and back.
bool good_client_is_served(const std::string& address) {
  asio::io_context loop;
  net::ReconnectingClientOptions o;
  o.host = address;
  o.make_codec = [] { return make_codec(Framing::checked); };
  o.make_transport = client_transport(Link::shm);
  int heard = 0;
  net::ReconnectingClient client(loop, o, {.on_message = [&](const net::Message&) { ++heard; }});
  client.start();
  if (!run_until(loop, [&] { return client.connected(); }, 5s)) return false;
  for (int i = 0; i < 10; ++i) client.send(message(Framing::checked, "good " + std::to_string(i)));
  const bool served = run_until(loop, [&] { return heard == 10; }, 5s);
  client.stop();
  run_until(loop, [&] { return !client.connected(); }, 5s);
  return served;
}

struct ShmServer {
  TempDir dir;
  std::string flag = fresh_unix_flag();
  std::string address = unix_address_of(flag);
  RunningPingPongServer server{dir, {"--unix", flag, "--shm", "--framing", "checked"}};
};

TEST(Shm, AnOfferTheServerCannotTrustFailsItsHandshakeAndIsCounted) {
  ShmServer s;
  for (const Flaw flaw : {Flaw::unsealed, Flaw::bad_magic, Flaw::short_file, Flaw::no_descriptors}) {
    HandMadeClient hostile(s.address, flaw);
    EXPECT_EQ(hostile.answer(), "closed") << "flaw " << static_cast<int>(flaw);
  }
  EXPECT_TRUE(good_client_is_served(s.address));
  const auto report = s.server.stop();
  EXPECT_EQ(json_u64(report, "handshake_failures"), 4u) << boost::json::serialize(report);
}

TEST(Shm, ACorruptRingEndsThatConnectionWithACountedErrorAndOthersGoOn) {
  ShmServer s;
  HandMadeClient hostile(s.address, Flaw::none);
  ASSERT_EQ(hostile.answer(), "A");
  EXPECT_TRUE(good_client_is_served(s.address));
  hostile.corrupt_write_index();
  EXPECT_EQ(hostile.answer(), "closed") << "the server kept a connection whose ring is corrupt";
  EXPECT_TRUE(good_client_is_served(s.address));
  const auto report = s.server.stop();
  EXPECT_EQ(json_u64(report.at("closes").as_object(), "i/o error"), 1u) << boost::json::serialize(report);
  EXPECT_EQ(json_u64(report, "handshake_failures"), 0u);
}

// No spinning before sleep, and rings smaller than a few messages: every
// message is a data doorbell and a wake-up, and most writes wait for a room
// doorbell. Everything arrives, in order, both ways.
TEST(Shm, DoorbellsAloneCarryAStreamThroughRingsSmallerThanItsMessages) {
  TempDir dir;
  const std::string flag = fresh_unix_flag();
  RunningPingPongServer server(dir, {"--unix", flag, "--shm", "--shm-spin", "0", "--framing", "checked"});
  asio::io_context loop;
  net::ReconnectingClientOptions o;
  o.host = unix_address_of(flag);
  o.make_codec = [] { return make_codec(Framing::checked); };
  o.make_transport = [] {
    return net::make_shm_transport(net::ShmRole::client, {.ring_bytes = shm::kMinCapacity, .spin_before_sleep = {}});
  };
  o.connection_limits.high_water = 16u << 20;
  const auto text = [](int i) {
    std::string t = std::to_string(i) + ":";
    t.resize(i % 3 == 0 ? 10000 : 50 + static_cast<std::size_t>(i % 700), static_cast<char>('a' + i % 26));
    return t;
  };
  std::vector<std::string> heard;
  net::ReconnectingClient client(loop, o, {.on_message = [&](const net::Message& m) {
                                   heard.push_back(text_of(Framing::checked, m.bytes));
                                 }});
  client.start();
  ASSERT_TRUE(run_until(loop, [&] { return client.connected(); }, 5s));
  constexpr int kMessages = 600;
  for (int burst = 0; burst < kMessages; burst += 50) {
    for (int i = burst; i < burst + 50; ++i) ASSERT_EQ(client.send(message(Framing::checked, text(i))), net::SendResult::sent);
    ASSERT_TRUE(run_until(loop, [&] { return heard.size() == static_cast<std::size_t>(burst + 50); }, 10s)) << heard.size();
  }
  int wrong = 0;
  for (int i = 0; i < kMessages; ++i) wrong += heard[static_cast<std::size_t>(i)] != text(i);
  EXPECT_EQ(wrong, 0);
  client.stop();
  run_until(loop, [&] { return !client.connected(); }, 5s);
  EXPECT_EQ(json_u64(server.stop(), "messages_in"), static_cast<std::uint64_t>(kMessages));
}

}  // namespace
}  // namespace volley::test
