// Shared memory's untrusted peer: a client that offers a region the server
// cannot trust fails its handshake, one that corrupts its ring afterwards
// loses its connection with a counted error, and a good client beside them
// is served throughout. The hostile client here speaks the set-up by hand
// (docs/PROTOCOL.md, "Shared-memory rings").
#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <volley/net/reconnecting_client.hpp>
#include <volley/net/shm.hpp>

#include "child_process.hpp"
#include "framings.hpp"
#include "hand_made_shm_client.hpp"
#include "links.hpp"
#include "listening_server.hpp"
#include "run_until.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace shm = wire::shm;
using HandMadeClient = HandMadeShmClient;
using Flaw = HandMadeShmClient::Flaw;

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
