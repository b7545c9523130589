// The abuse matrix over WebSocket: the same four server programs serving
// WebSocket (`--ws`, `--proto ws` for the echo server), each attacked where
// WebSocket adds surface (the HTTP upgrade, unmasked frames, lying lengths, a
// message that never ends, pings that are never read) while a good client
// works over WebSocket alongside. Refused upgrades must show in the server's
// `handshake_failures`; protocol violations after the upgrade get their close
// code (RFC 6455, 7.4.1) and show in the counters the TCP matrix reads.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <volley/wire/byte_order.hpp>
#include <volley/wire/websocket.hpp>

#include "adversarial.hpp"
#include "bytes_of.hpp"
#include "listening_server.hpp"
#include "target_fixture.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace ws = wire::websocket;

// The servers take messages of at most this here, so a message that never
// ends reaches the limit in a few hundred kilobytes.
constexpr std::uint64_t kMaxMessage = 256 * 1024;

const std::string kUpgrade =
    "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

// The subject serving WebSocket, its good client connecting over it.
Subject over_websocket(Subject s) {
  const std::vector<std::string> ws_max{"--ws-max-message", std::to_string(kMaxMessage)};
  if (s.name == "echo-server") {
    std::replace(s.server.begin(), s.server.end(), std::string("tcp"), std::string("ws"));
    s.server.insert(s.server.end(), ws_max.begin(), ws_max.end());
    s.good_client = [client = s.good_client](int port) {
      auto argv = client(port);
      argv.insert(argv.end(), {"--proto", "ws"});
      return argv;
    };
    // A WebSocket echo can tell a violation: the echo server counts it in `errors`.
    s.counted = [](const boost::json::object& r) -> std::optional<std::uint64_t> { return u64(r.at("errors")); };
  } else {
    s.server.push_back("--ws");
    s.server.insert(s.server.end(), ws_max.begin(), ws_max.end());
    s.good_client = [client = s.good_client](int port) {
      auto argv = client(port);
      argv.push_back("--ws");
      return argv;
    };
  }
  return s;
}

// A client's frame: masked with a fixed key unless `masked` is false (which a
// server must refuse).
Bytes client_frame(ws::Opcode opcode, bool fin, std::span<const std::byte> payload, bool masked = true) {
  static constexpr std::array<std::byte, 4> key{std::byte{0x37}, std::byte{0xfa}, std::byte{0x21}, std::byte{0x3d}};
  Bytes frame(ws::kMaxHeaderSize + payload.size());
  const std::size_t header = ws::encode_header(frame.data(), fin, opcode, payload.size(), masked ? &key : nullptr);
  if (masked) {
    ws::mask_copy(payload.data(), frame.data() + header, payload.size(), key, 0);
  } else if (!payload.empty()) {
    std::memcpy(frame.data() + header, payload.data(), payload.size());
  }
  frame.resize(header + payload.size());
  return frame;
}

// The server's answer to an upgrade, up to its blank line (read a byte at a
// time, so nothing after the head is taken).
std::string read_head(Abuser& a, std::chrono::milliseconds wait) {
  std::string head;
  const auto until = Clock::now() + wait;
  while (head.find("\r\n\r\n") == std::string::npos && Clock::now() < until) {
    const Bytes b = a.read_bytes(1, 20ms);
    if (!b.empty()) head.push_back(static_cast<char>(b[0]));
  }
  return head;
}

// A connection whose upgrade the server accepted.
Abuser upgraded(int port, const std::string& server) {
  Abuser a(port);
  a.send(bytes_of(kUpgrade));
  const std::string head = read_head(a, 5000ms);
  EXPECT_EQ(head.substr(0, 12), "HTTP/1.1 101") << server << ": the upgrade was refused: " << head;
  return a;
}
Abuser upgraded(int port, const Subject& s) { return upgraded(port, s.name); }

struct CloseFrame {
  std::uint16_t code;
  std::string reason;
};

// The first close frame among a server's (unmasked) frames, once it has
// arrived whole.
std::optional<CloseFrame> close_frame_in(const Bytes& b) {
  std::size_t at = 0;
  while (at + 2 <= b.size()) {
    const auto opcode = static_cast<unsigned>(b[at]) & 0x0Fu;
    std::uint64_t length = static_cast<unsigned>(b[at + 1]) & 0x7Fu;
    std::size_t header = 2;
    if (length == 126) {
      if (at + 4 > b.size()) break;
      length = wire::load_u16_be(&b[at + 2]);
      header = 4;
    } else if (length == 127) {
      if (at + 10 > b.size()) break;
      length = (std::uint64_t{wire::load_u32_be(&b[at + 2])} << 32) | wire::load_u32_be(&b[at + 6]);
      header = 10;
    }
    if (b.size() - at - header < length) break;
    if (opcode == 8) {
      if (length < 2) return CloseFrame{ws::close_code::no_status, {}};
      const auto* reason = reinterpret_cast<const char*>(&b[at + header + 2]);
      return CloseFrame{wire::load_u16_be(&b[at + header]), std::string(reason, length - 2)};
    }
    at += header + length;
  }
  return std::nullopt;
}

std::optional<std::uint16_t> close_code_in(const Bytes& b) {
  const auto frame = close_frame_in(b);
  return frame ? std::optional(frame->code) : std::nullopt;
}

// How many pings are among a server's frames.
std::size_t pings_in(const Bytes& b) {
  std::size_t at = 0, pings = 0;
  while (at + 2 <= b.size() && (static_cast<unsigned>(b[at + 1]) & 0x7Fu) < 126) {
    const std::size_t length = static_cast<unsigned>(b[at + 1]) & 0x7Fu;
    if ((static_cast<unsigned>(b[at]) & 0x0Fu) == 9) ++pings;
    at += 2 + length;
  }
  return pings;
}

// What the server sends until its close frame (or `wait` runs out), added to `got`.
std::optional<std::uint16_t> read_until_close(Abuser& a, Bytes& got, std::chrono::milliseconds wait) {
  const auto until = Clock::now() + wait;
  std::optional<std::uint16_t> code = close_code_in(got);
  while (!code && Clock::now() < until) {
    const Bytes more = a.read_bytes(64 * 1024, 20ms);
    got.insert(got.end(), more.begin(), more.end());
    code = close_code_in(got);
  }
  return code;
}

// The subject's request repeated to at least `n` bytes.
Bytes requests(const Subject& s, std::size_t n) {
  Bytes stream;
  while (stream.size() < n) stream.insert(stream.end(), s.request.begin(), s.request.end());
  return stream;
}

std::vector<LayerAbuse> ws_abuses() {
  return {
      {{"bad_upgrades", true,
        [](int port, const Subject& s) {
          const std::string key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
          const std::string upgrade = "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
          const std::vector<std::string> requests{
              "POST / HTTP/1.1\r\n" + upgrade + key + "Sec-WebSocket-Version: 13\r\n\r\n",  // 405
              "GET / HTTP/1.1\r\nHost: x\r\n" + key + "Sec-WebSocket-Version: 13\r\n\r\n",  // 400: no upgrade
              "GET / HTTP/1.1\r\n" + upgrade + key + "Sec-WebSocket-Version: 8\r\n\r\n",    // 426
              "GET / HTTP/1.1\r\nX-Filler: " + std::string(9000, 'a') + "\r\n\r\n",          // 431
              "\xee\x01 not http at all\r\n\r\n",                                           // 400
          };
          for (const auto& request : requests) {
            Abuser a(port);
            a.send(bytes_of(request));
            const std::string head = read_head(a, 5000ms);
            EXPECT_EQ(head.substr(0, 10), "HTTP/1.1 4") << s.name << " answered " << request.substr(0, 40);
          }
        }},
       true},
      {{"upgrade_byte_by_byte", false,
        [](int port, const Subject& s) {
          Abuser a(port);
          for (char c : kUpgrade) {
            const std::byte b{static_cast<unsigned char>(c)};
            a.send(std::span(&b, 1));
            std::this_thread::sleep_for(1ms);
          }
          // An upgrade that arrives a byte at a time is still an upgrade, and a request after it is answered.
          const std::string head = read_head(a, 5000ms);
          ASSERT_EQ(head.substr(0, 12), "HTTP/1.1 101") << s.name << ": " << head;
          a.send(client_frame(ws::Opcode::binary, true, s.request));
          const Bytes answer = a.read_bytes(1, 5000ms);
          ASSERT_EQ(answer.size(), 1u) << s.name << ": no answer after an upgrade sent byte by byte";
          EXPECT_EQ(answer[0], std::byte{0x82}) << s.name << ": the answer is not one binary message";
        }},
       false},
      {{"unmasked_frame", true,
        [](int port, const Subject& s) {
          for (int i = 0; i < 4; ++i) {
            Abuser a = upgraded(port, s);
            a.send(client_frame(ws::Opcode::binary, true, s.request, false));
            Bytes got;
            EXPECT_EQ(read_until_close(a, got, 5000ms), ws::close_code::protocol_error) << s.name;
          }
        }},
       false},
      {{"lying_message_length", true,
        [](int port, const Subject& s) {
          static constexpr std::array<std::byte, 4> key{};
          for (int i = 0; i < 4; ++i) {
            Abuser a = upgraded(port, s);
            Bytes lie(ws::kMaxHeaderSize);
            lie.resize(ws::encode_header(lie.data(), true, ws::Opcode::binary, std::uint64_t{1} << 40, &key));
            lie.resize(lie.size() + 100, std::byte{0});
            a.send(lie);
            Bytes got;
            EXPECT_EQ(read_until_close(a, got, 5000ms), ws::close_code::message_too_big) << s.name;
          }
        }},
       false},
      {{"endless_message", true,
        [](int port, const Subject& s) {
          // Valid requests, in a message whose final fragment never comes: answered as they
          // arrive, until the message passes the maximum.
          const Bytes stream = requests(s, 2 * kMaxMessage);
          constexpr std::size_t kFragment = 4096;
          for (int i = 0; i < 2; ++i) {
            Abuser a = upgraded(port, s);
            Bytes got;
            for (std::size_t at = 0; at < stream.size() && !close_code_in(got); at += kFragment) {
              const auto piece = std::span(stream).subspan(at, std::min(kFragment, stream.size() - at));
              if (!a.send(client_frame(at == 0 ? ws::Opcode::binary : ws::Opcode::continuation, false, piece))) break;
              const Bytes answers = a.read_bytes(256 * 1024, 1ms);  // what has come back so far
              got.insert(got.end(), answers.begin(), answers.end());
            }
            EXPECT_EQ(read_until_close(a, got, 5000ms), ws::close_code::message_too_big) << s.name;
          }
        }},
       false},
      {{"pings_never_read", false,
        [](int port, const Subject& s) {
          // Each ping asks for a pong; a peer that never reads them must not make the server keep them.
          Abuser a = upgraded(port, s);
          const Bytes ping = client_frame(ws::Opcode::ping, true, Bytes(ws::kMaxControlPayload, std::byte{0x70}));
          Bytes burst;
          while (burst.size() < 64 * 1024) burst.insert(burst.end(), ping.begin(), ping.end());
          const auto until = Clock::now() + 3000ms;
          while (Clock::now() < until && a.send(burst)) {
          }
        }},
       false},
      {{"never_reads", false,
        [](int port, const Subject& s) {
          Abuser a = upgraded(port, s);
          const Bytes burst = client_frame(ws::Opcode::binary, true, requests(s, 64 * 1024));
          const auto until = Clock::now() + 1500ms;
          while (Clock::now() < until && a.send(burst)) {
          }
        }},
       false},
  };
}

class AbusedOverWebSocket : public testing::TestWithParam<Case<LayerAbuse>> {};

TEST_P(AbusedOverWebSocket, StaysUpBoundedAndExactForAGoodClientAlongside) {
  expect_survives(over_websocket(subject(GetParam().subject, Link::tcp)), GetParam().abuse);
}

INSTANTIATE_TEST_SUITE_P(WsServers, AbusedOverWebSocket, testing::ValuesIn(every_case(ws_abuses())),
                         [](const auto& info) { return case_name(info.param); });

// One worker loop, a good client and a peer whose frames make the loop work
// for little or no data, for 2 s: the good client's longest round trip is the
// stall the peer caused. Before, the transport read on for as long as frames
// kept coming, so every client on the loop stalled for as long as the attack
// kept the socket full (4.5-5.0 s of a 5 s attack, every server program, found
// by probes; here, on 2 loaded CPUs, 192 ms to 2.0 s against the binary
// before). Now a read turn ends after 256 KiB of frames, and empty
// data frames (1024 in a row) or pings and pongs (100 a second) beyond their
// bound are a flood: closed with 1008 and counted. On two CPUs the attacker
// cannot always keep the server's socket full (with the bound taken out,
// 2026-11-29: some attacks stalled the good client 1.1-2.0 s, others 2-3 ms, and
// the best of three passed): the unit test
// WebSocketTransport.AReadTurnTakesAtMostItsBoundOfFramesHoweverFastTheyCome
// pins the bound with a peer that never runs dry.
struct Flood {
  std::string name;
  bool closed_as_flood;  // the server must close it with 1008 and count it
  // The attack's next burst of frames (about 64 KiB), given the subject.
  std::function<Bytes(const Subject&, std::size_t burst)> frames;
};

const std::string& name_of(const Flood& f) { return f.name; }

// What the server sends first after a request: the bytes that have come once
// any have (an answer split across reads only makes a later round trip look
// shorter), or none after `wait`.
Bytes first_bytes(Abuser& a, std::chrono::milliseconds wait) {
  const auto until = Clock::now() + wait;
  Bytes got;
  while (got.empty() && Clock::now() < until) got = a.read_bytes(64 * 1024, 1ms);
  return got;
}

std::vector<Flood> floods() {
  auto repeat = [](const Bytes& unit) {
    Bytes out;
    while (out.size() < 64 * 1024) out.insert(out.end(), unit.begin(), unit.end());
    return out;
  };
  return {
      {"empty_continuations", true,
       [repeat](const Subject& s, std::size_t burst) {
         // A message begun with a valid request, then fragments that carry nothing.
         Bytes out = burst == 0 ? client_frame(ws::Opcode::binary, false, s.request) : Bytes{};
         const Bytes empty = repeat(client_frame(ws::Opcode::continuation, false, {}));
         out.insert(out.end(), empty.begin(), empty.end());
         return out;
       }},
      {"pings", true,
       [repeat](const Subject&, std::size_t) { return repeat(client_frame(ws::Opcode::ping, true, {})); }},
      {"unsolicited_pongs", true,
       [repeat](const Subject&, std::size_t) { return repeat(client_frame(ws::Opcode::pong, true, {})); }},
      {"sparse_payload", false,
       [](const Subject& s, std::size_t burst) {
         // Within every bound: 1000 empty fragments, then one byte of the
         // request stream, over and over (the message grows by a byte per 6 KiB).
         Bytes out = burst == 0 ? client_frame(ws::Opcode::binary, false, {}) : Bytes{};
         const Bytes empty = client_frame(ws::Opcode::continuation, false, {});
         for (std::size_t i = 0; i < 10; ++i) {
           for (int e = 0; e < 1000; ++e) out.insert(out.end(), empty.begin(), empty.end());
           const std::byte b = s.request[(burst * 10 + i) % s.request.size()];
           const Bytes one = client_frame(ws::Opcode::continuation, false, std::span(&b, 1));
           out.insert(out.end(), one.begin(), one.end());
         }
         return out;
       }},
  };
}

class FloodedOverWebSocket : public testing::TestWithParam<Case<Flood>> {};

// One attack of 2 s beside the good client: its longest round trip.
Clock::duration longest_round_trip_under(const Flood& flood, const Subject& s, int port, Abuser& good) {
  Abuser attacker = upgraded(port, s);
  const Bytes request = client_frame(ws::Opcode::binary, true, s.request);
  std::jthread attack([&](const std::stop_token& stop) {
    const auto until = Clock::now() + 2000ms;
    for (std::size_t burst = 0; !stop.stop_requested() && Clock::now() < until; ++burst)
      if (!attacker.send(flood.frames(s, burst))) break;  // closed by the server
  });
  Clock::duration longest{};
  const auto until = Clock::now() + 2000ms;
  while (Clock::now() < until) {
    const auto start = Clock::now();
    if (!good.send(request)) {
      ADD_FAILURE() << s.name << ": the good client's connection broke";
      return Clock::duration::max();
    }
    const Bytes answer = first_bytes(good, 5000ms);
    longest = std::max(longest, Clock::now() - start);
    if (answer.empty()) {
      ADD_FAILURE() << s.name << ": no answer within 5 s during the attack";
      return longest;
    }
  }
  attack.join();
  if (flood.closed_as_flood) {
    Bytes got;
    EXPECT_EQ(read_until_close(attacker, got, 5000ms), ws::close_code::policy_violation) << s.name;
  }
  return longest;
}

// The stall is judged by the best of up to three attacks: one the code causes
// shows in each (before the fix every attack stalled 192 ms or more), while a
// 2-CPU machine busy with other tests now and then deschedules the server for
// a while whatever it runs (143 ms, once, in a loaded run). Under the
// sanitizers every turn takes longer and the machine's scheduling decides
// more: with ThreadSanitizer and both CPUs kept busy the best of three was
// 102-118 ms for the sparse payload (2026-11-29), so there the bound is 300 ms.
TEST_P(FloodedOverWebSocket, AGoodClientOnTheSameLoopIsNotStalled) {
  const Flood& flood = GetParam().abuse;
  Subject s = over_websocket(subject(GetParam().subject, Link::tcp));
  s.server.insert(s.server.end(), {"-t", "1"});  // one loop: the good client shares it with the attack
  TempDir dir;
  ListeningServer server(dir, s.server, s.name);
  ASSERT_GT(server.port(), 0);
  Abuser good = upgraded(server.port(), s);
  // The first round trip before the attack: the server is warm.
  ASSERT_TRUE(good.send(client_frame(ws::Opcode::binary, true, s.request)));
  ASSERT_FALSE(first_bytes(good, 5000ms).empty()) << s.name << ": no answer before the attack";

  std::vector<long> stalls_ms;
  Clock::duration best = Clock::duration::max();
  const Clock::duration bound = kSlowedBySanitizer ? 300ms : 100ms;
  for (int attack = 0; attack < 3 && best > bound && !HasFailure(); ++attack) {
    const Clock::duration longest = longest_round_trip_under(flood, s, server.port(), good);
    best = std::min(best, longest);
    stalls_ms.push_back(static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(longest).count()));
  }
  // (The sanitizers' runtime holds memory of its own: shadow, quarantine.)
  EXPECT_LT(resident_kib(server.process().pid()), (kSanitizerBuild ? 768u : 200u) * 1024) << s.name;
  std::string stalls;
  for (const long ms : stalls_ms) stalls += std::to_string(ms) + " ms ";
  ::testing::Test::RecordProperty("longest_round_trips", stalls);
  EXPECT_LE(best, bound) << s.name << ": the good client stalled in every attack: " << stalls;
  const boost::json::object report = server.stop();
  EXPECT_EQ(u64(report.at("websocket_floods")), flood.closed_as_flood ? stalls_ms.size() : 0u)
      << boost::json::serialize(report);
}

INSTANTIATE_TEST_SUITE_P(WsServers, FloodedOverWebSocket, testing::ValuesIn(every_case(floods())),
                         [](const auto& info) { return case_name(info.param); });

// A client that sends nothing and answers nothing, not even the server's
// pings (a host gone, a frozen tab), is closed with a close frame that says
// why, not dropped (which a browser sees as 1006, no reason): at the idle
// timeout on a server without sessions (1000), at the heartbeat's liveness
// limit on a session server (1008). It reads what comes, never writing.
// What a client that never writes after its upgrade reads up to the server's
// close frame: the frame, and how many pings came before it.
std::pair<CloseFrame, std::size_t> silent_until_closed(const ListeningServer& server, const std::string& name) {
  Abuser silent = upgraded(server.port(), name);
  Bytes got;
  if (!read_until_close(silent, got, 20s)) {
    ADD_FAILURE() << name << ": no close frame";
    return {};
  }
  return {*close_frame_in(got), pings_in(got)};
}

TEST(SilentWebSocketClient, IsClosedAtTheIdleTimeoutWithACloseFrameThatSaysWhy) {
  TempDir dir;
  ListeningServer server(dir, {"echo-server", "--proto", "ws", "-p", "0", "--json", "--no-progress", "--idle-timeout", "1s"},
                         "echo-server");
  const auto [frame, pings] = silent_until_closed(server, "echo-server");
  EXPECT_EQ(frame.code, ws::close_code::normal);
  EXPECT_EQ(frame.reason, "idle timeout: no byte either way for 1000 ms");
  EXPECT_GE(pings, 1u) << "asked first whether it was there";
  server.stop();
}

TEST(SilentWebSocketClient, IsClosedAtTheHeartbeatLimitWithACloseFrameThatSaysWhy) {
  TempDir dir;
  ListeningServer server(dir, {"pingpong-server", "--ws", "-p", "0", "--json", "--no-progress", "--heartbeat", "300ms",
                               "--heartbeat-misses", "3"},
                         "pingpong-server");
  const auto [frame, pings] = silent_until_closed(server, "pingpong-server");
  EXPECT_EQ(frame.code, ws::close_code::policy_violation);
  EXPECT_EQ(frame.reason.rfind("heartbeat timeout: nothing received for ", 0), 0u) << frame.reason;
  EXPECT_GE(pings, 2u);
  const auto report = server.stop();
  EXPECT_EQ(u64(report.at("closes").at("heartbeat timeout")), 1u) << boost::json::serialize(report);
}

}  // namespace
}  // namespace volley::test
