// WebSocket and WebSocket over TLS, against an independent implementation
// (Boost.Beast's client and server) as well as Volley's own: the echo server
// and client, the gNB target, the checked-frame ping-pong and RPC, RFC 6455's
// control frames, fragmentation, close codes and refused upgrades.
#include <sys/socket.h>

#include <array>
#include <condition_variable>
#include <optional>
#include <span>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <volley/gnb/protocol.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/websocket.hpp>

#include "bytes_of.hpp"
#include "child_process.hpp"
#include "echo_fixture.hpp"
#include "listening_server.hpp"
#include "raw_client.hpp"
#include "run_until.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

// Shuts a socket down when a test has waited too long, so a blocking read
// fails instead of hanging the suite.
class Deadline {
 public:
  Deadline(int fd, std::chrono::seconds after) : thread_([this, fd, after] {
      std::unique_lock lock(mutex_);
      if (!done_cv_.wait_for(lock, after, [this] { return done_; })) ::shutdown(fd, SHUT_RDWR);
    }) {}
  ~Deadline() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) % 251);
  return s;
}

// A Beast client on loopback.
template <class Stream>
std::string read_echo(websocket::stream<Stream>& ws, std::size_t n) {
  std::string got;
  beast::flat_buffer buffer;
  while (got.size() < n) {
    ws.read(buffer);
    EXPECT_TRUE(ws.got_binary());
    got += beast::buffers_to_string(buffer.data());
    buffer.consume(buffer.size());
  }
  return got;
}

struct BeastClient {
  asio::io_context io;
  websocket::stream<tcp::socket> ws{io};
  explicit BeastClient(int port, const std::string& target = "/") {
    ws.next_layer().connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    ws.next_layer().set_option(tcp::no_delay(true));
    ws.handshake("127.0.0.1:" + std::to_string(port), target);
    ws.binary(true);
  }
  std::string echo(const std::string& message) {
    ws.write(asio::buffer(message));
    return read_echo(ws, message.size());
  }
  // The close code the server sent after `message`.
  std::uint16_t close_code_after(const std::string& message, bool text = false) {
    ws.text(text);
    ws.write(asio::buffer(message));
    beast::flat_buffer buffer;
    beast::error_code ec;
    while (!ec) ws.read(buffer, ec);
    EXPECT_EQ(ec, websocket::error::closed) << ec.message();
    return ws.reason().code;
  }
};

// Reads in the background (run the client's io), answering pings as Beast
// does by itself, as a browser does, and counting them.
struct AnsweringPings {
  explicit AnsweringPings(BeastClient& client) {
    client.ws.control_callback([this](websocket::frame_type kind, beast::string_view) {
      if (kind == websocket::frame_type::ping) ++pings;
    });
    client.ws.async_read(buffer, [this](beast::error_code ec, std::size_t) { result = ec; });
  }
  int pings = 0;
  beast::flat_buffer buffer;
  std::optional<beast::error_code> result;  // set once the read ends: a message, or the end
};

TEST(WebSocket, TheEchoServerAnswersAnIndependentClientByteForByte) {
  TempDir dir;
  EchoServer server(dir, {"--proto", "ws"});
  {
    BeastClient client(server.port());
    const Deadline deadline(client.ws.next_layer().native_handle(), 60s);
    // Every length form: 7-bit, 16-bit and 64-bit.
    for (std::size_t size : {1, 125, 126, 65535, 65536, 300000}) {
      const std::string message = pattern(size, static_cast<unsigned>(size));
      EXPECT_EQ(client.echo(message), message) << size;
    }
    // A message in three frames, a ping between two of them, and the pong back.
    std::string pong;
    client.ws.control_callback([&](websocket::frame_type kind, beast::string_view payload) {
      if (kind == websocket::frame_type::pong) pong = std::string(payload);
    });
    const std::string whole = pattern(3000, 7);
    client.ws.write_some(false, asio::buffer(whole.data(), 1000));
    client.ws.ping("are you there");
    client.ws.write_some(false, asio::buffer(whole.data() + 1000, 1000));
    client.ws.write_some(true, asio::buffer(whole.data() + 2000, 1000));
    EXPECT_EQ(read_echo(client.ws, whole.size()), whole);
    EXPECT_EQ(pong, "are you there");
    client.ws.close(websocket::close_code::normal);
  }
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "connections"), 1u);
  EXPECT_EQ(json_u64(report, "errors"), 0u);
  EXPECT_EQ(json_u64(report, "bytes"), 1 + 125 + 126 + 65535 + 65536 + 300000 + 3000u);
}

// An echo over a message transport returns each message as one message,
// however the server read and wrote its bytes (a 70,000-byte message used to
// come back as 65,536 and 4,464).
TEST(WebSocket, TheEchoServerSendsEachMessageBackWhole) {
  TempDir dir;
  EchoServer server(dir, {"--proto", "ws"});
  {
    BeastClient client(server.port());
    const Deadline deadline(client.ws.next_layer().native_handle(), 60s);
    const std::vector<std::size_t> sizes{200000, 1, 70000, 65536, 5};
    for (std::size_t i = 0; i < sizes.size(); ++i)  // all sent before any is read: they queue up
      client.ws.write(asio::buffer(pattern(sizes[i], static_cast<unsigned>(i))));
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      beast::flat_buffer buffer;
      client.ws.read(buffer);  // one whole message
      EXPECT_TRUE(client.ws.got_binary());
      EXPECT_EQ(beast::buffers_to_string(buffer.data()), pattern(sizes[i], static_cast<unsigned>(i)))
          << "message " << i << " of " << sizes[i] << " bytes came back as " << buffer.size();
    }
    client.ws.close(websocket::close_code::normal);
  }
  EXPECT_EQ(json_u64(server.stop(), "errors"), 0u);
}

// Keepalive is RFC 6455's: a quiet connection is pinged, and a client that
// only answers (as every browser does by itself) stays, however long it sends
// nothing of its own.
TEST(WebSocket, AClientThatOnlyAnswersPingsStaysConnected) {
  TempDir dir;
  EchoServer server(dir, {"--proto", "ws", "--idle-timeout", "1s"});
  BeastClient client(server.port());
  const Deadline deadline(client.ws.next_layer().native_handle(), 60s);
  AnsweringPings reader(client);
  run_bounded(client.io, 4s);  // four idle timeouts
  EXPECT_FALSE(reader.result.has_value()) << "closed: " << reader.result->message() << " " << client.ws.reason().reason;
  EXPECT_GE(reader.pings, 2);
  const std::string message = pattern(1000, 3);
  client.ws.async_write(asio::buffer(message), [](beast::error_code, std::size_t) {});
  run_until(client.io, [&] { return reader.result.has_value(); }, 10s);
  ASSERT_TRUE(reader.result.has_value());
  EXPECT_FALSE(*reader.result) << reader.result->message();
  EXPECT_EQ(beast::buffers_to_string(reader.buffer.data()), message);
  client.ws.close(websocket::close_code::normal);
  server.stop();
}

// A session's heartbeat over WebSocket is a ping too: a client that answers
// (as every browser does by itself) stays past the liveness limit, however
// long it sends nothing of its own.
TEST(WebSocket, ASessionPingsItsPeerAndAClientThatAnswersStays) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--ws", "--no-progress", "--heartbeat", "300ms", "--heartbeat-misses", "3"});
  BeastClient client(server.port());
  const Deadline deadline(client.ws.next_layer().native_handle(), 60s);
  AnsweringPings reader(client);
  run_bounded(client.io, 3s);  // over three liveness limits (900 ms)
  EXPECT_FALSE(reader.result.has_value()) << "closed: " << reader.result->message() << " " << client.ws.reason().reason;
  EXPECT_GE(reader.pings, 3);
  const auto report = server.stop();  // the client is still there: closed as the server stops
  EXPECT_EQ(boost::json::value_to<std::uint64_t>(report.at("closes").at("heartbeat timeout")), 0u) << boost::json::serialize(report);
  EXPECT_GE(json_u64(report, "heartbeats_out"), 3u) << boost::json::serialize(report);
}

// A server that drains (--drain, SIGTERM) says goodbye over WebSocket with
// its close frame, 1001 "going away": an independent client reads it after
// the echo it was owed, and the server exits once the close is done.
TEST(WebSocket, ADrainingServerClosesWith1001GoingAway) {
  TempDir dir;
  RunningPingPongServer server(dir, {"--ws", "--no-progress", "--drain"});
  BeastClient client(server.port());
  const Deadline deadline(client.ws.next_layer().native_handle(), 60s);
  const std::string hi("\x00\x00\x07\x01\x01hi", 7);  // "hi" in a checked frame
  EXPECT_EQ(client.echo(hi), hi);
  server.process().send_signal(SIGTERM);
  beast::flat_buffer buffer;
  beast::error_code ec;
  while (!ec) client.ws.read(buffer, ec);
  EXPECT_EQ(ec, websocket::error::closed) << ec.message();
  EXPECT_EQ(client.ws.reason().code, websocket::close_code::going_away);
  const auto report = server.report();
  EXPECT_EQ(json_u64(report, "goodbyes_out"), 1u) << boost::json::serialize(report);
}

TEST(WebSocket, ViolationsGetTheirCloseCodeAndOtherClientsAreUndisturbed) {
  TempDir dir;
  EchoServer server(dir, {"--proto", "ws", "--ws-max-message", "1024"});
  BeastClient good(server.port());
  const Deadline deadline(good.ws.next_layer().native_handle(), 60s);
  EXPECT_EQ(good.echo("before"), "before");
  {
    BeastClient text(server.port());
    EXPECT_EQ(text.close_code_after("hello", true), websocket::close_code::unknown_data);  // 1003
  }
  {
    BeastClient big(server.port());
    EXPECT_EQ(big.close_code_after(pattern(1025, 1)), websocket::close_code::too_big);  // 1009
  }
  {
    // By hand: a valid upgrade, then a frame without a mask.
    RawClient raw(server.port());
    raw.send(bytes_of("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
    const std::string expected = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                 "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    const auto head = raw.read(expected.size());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(head.data()), head.size()), expected);
    raw.send(std::vector<std::byte>{std::byte{0x82}, std::byte{0x01}, std::byte{0x41}});
    const auto close = raw.read(4);  // close, 2 bytes: 1002
    EXPECT_EQ(close, (std::vector<std::byte>{std::byte{0x88}, std::byte{0x02}, std::byte{0x03}, std::byte{0xea}}));
    EXPECT_TRUE(raw.peer_closed());
  }
  EXPECT_EQ(good.echo(pattern(1024, 3)), pattern(1024, 3));
  good.ws.close(websocket::close_code::normal);
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "connections"), 4u);
  EXPECT_EQ(json_u64(report, "errors"), 3u);  // the three that broke the protocol
}

// A client's frame, masked (as a client's must be).
std::vector<std::byte> masked_frame(wire::websocket::Opcode opcode, std::span<const std::byte> payload) {
  static constexpr std::array<std::byte, 4> key{std::byte{0x0b}, std::byte{0xad}, std::byte{0xf0}, std::byte{0x0d}};
  std::vector<std::byte> frame(wire::websocket::kMaxHeaderSize + payload.size());
  const std::size_t header = wire::websocket::encode_header(frame.data(), true, opcode, payload.size(), &key);
  wire::websocket::mask_copy(payload.data(), frame.data() + header, payload.size(), key, 0);
  frame.resize(header + payload.size());
  return frame;
}

TEST(WebSocket, APeersCloseIsAnsweredAfterWhatWasAlreadyQueuedForIt) {
  // A message and a close frame in one segment: the server reads both at once,
  // and the echo of the message is queued only after the close is known. The
  // close must be answered after that echo; answered at once, it dropped the
  // echo (no data may follow a close frame), and a client that half-closed
  // after its last request lost the replies still owed to it.
  TempDir dir;
  EchoServer server(dir, {"--proto", "ws"});
  for (std::size_t size : {1, 200, 70000}) {
    RawClient raw(server.port());
    raw.send(bytes_of("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"));
    const std::string head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
    ASSERT_EQ(raw.read(head.size()).size(), head.size());
    const std::vector<std::byte> message = bytes_of(pattern(size, 11));
    std::vector<std::byte> segment = masked_frame(wire::websocket::Opcode::binary, message);
    const std::vector<std::byte> code{std::byte{0x03}, std::byte{0xe8}};  // 1000
    const auto close = masked_frame(wire::websocket::Opcode::close, code);
    segment.insert(segment.end(), close.begin(), close.end());
    raw.send(segment);

    std::vector<std::byte> echoed;
    std::optional<std::uint16_t> close_code;
    while (!close_code) {
      const auto header = raw.read(2);
      ASSERT_EQ(header.size(), 2u) << size << ": the connection ended after " << echoed.size() << " bytes, no close";
      std::uint64_t length = static_cast<unsigned>(header[1]) & 0x7Fu;
      if (length == 126) {
        length = wire::load_u16_be(raw.read(2).data());
      } else if (length == 127) {
        const auto ext = raw.read(8);
        length = (std::uint64_t{wire::load_u32_be(ext.data())} << 32) | wire::load_u32_be(ext.data() + 4);
      }
      const auto payload = raw.read(length);
      ASSERT_EQ(payload.size(), length);
      if ((static_cast<unsigned>(header[0]) & 0x0Fu) == 8) {
        ASSERT_EQ(payload.size(), 2u);
        close_code = wire::load_u16_be(payload.data());
      } else {
        echoed.insert(echoed.end(), payload.begin(), payload.end());
      }
    }
    EXPECT_EQ(echoed.size(), message.size()) << "the echo ahead of the close";
    EXPECT_TRUE(echoed == message);
    EXPECT_EQ(*close_code, wire::websocket::close_code::normal);
    EXPECT_TRUE(raw.peer_closed());
  }
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "errors"), 0u);
  EXPECT_EQ(json_u64(report, "bytes"), 1 + 200 + 70000u);
}

TEST(WebSocket, BadUpgradeRequestsGetTheirHttpStatusAndCount) {
  TempDir dir;
  EchoServer server(dir, {"--proto", "ws", "--ws-path", "/echo"});
  BeastClient good(server.port(), "/echo");
  const Deadline deadline(good.ws.next_layer().native_handle(), 60s);
  const std::string key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
  const std::string upgrade = "Host: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n";
  const std::vector<std::pair<std::string, std::string>> cases{
      {"POST /echo HTTP/1.1\r\n" + upgrade + key + "Sec-WebSocket-Version: 13\r\n\r\n", "405"},
      {"GET /echo HTTP/1.1\r\nHost: x\r\n" + key + "Sec-WebSocket-Version: 13\r\n\r\n", "400"},
      {"GET /echo HTTP/1.1\r\n" + upgrade + key + "Sec-WebSocket-Version: 8\r\n\r\n", "426"},
      {"GET / HTTP/1.1\r\n" + upgrade + key + "Sec-WebSocket-Version: 13\r\n\r\n", "404"},
      {"GET /echo HTTP/1.1\r\nX-Filler: " + std::string(9000, 'a') + "\r\n\r\n", "431"},
      {"\x16\x03\x01 not http at all\r\n\r\n", "400"},
  };
  for (const auto& [request, status] : cases) {
    RawClient raw(server.port());
    raw.send(bytes_of(request));
    const auto answer = raw.read_some(4096);
    const std::string text(reinterpret_cast<const char*>(answer.data()), answer.size());
    EXPECT_EQ(text.substr(0, 12), "HTTP/1.1 " + status) << text;
    EXPECT_TRUE(raw.peer_closed());
    EXPECT_EQ(good.echo("still here"), "still here");
  }
  good.ws.close(websocket::close_code::normal);
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "handshake_failures"), cases.size());
  EXPECT_EQ(json_u64(report, "connections"), 1u);
}

TEST(WebSocket, OverTlsAnIndependentClientAndVolleysOwnGetEveryByteBack) {
  TempDir dir;
  const std::string certs = make_certs(dir);
  EchoServer server(dir, {"--proto", "wss", "--cert", certs + "/server.pem", "--key", certs + "/server.key"});
  {
    asio::io_context io;
    asio::ssl::context tls(asio::ssl::context::tls_client);
    tls.load_verify_file(certs + "/ca.pem");
    tls.set_verify_mode(asio::ssl::verify_peer);
    websocket::stream<asio::ssl::stream<tcp::socket>> ws(io, tls);
    beast::get_lowest_layer(ws).connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(server.port())});
    const Deadline deadline(beast::get_lowest_layer(ws).native_handle(), 60s);
    ws.next_layer().handshake(asio::ssl::stream_base::client);
    ws.handshake("127.0.0.1", "/");
    ws.binary(true);
    for (std::size_t size : {10, 70000, 1 << 20}) {
      const std::string message = pattern(size, 9);
      ws.write(asio::buffer(message));
      EXPECT_EQ(read_echo(ws, size), message) << size;
    }
    ws.close(websocket::close_code::normal);
  }
  const auto r = run_client(dir, server.port(), {"--proto", "wss", "--ca", certs + "/ca.pem", "-c", "8", "-t", "2",
                                                      "-m", "100", "-s", "100", "-z", "0.5"});
  expect_clean_run(r, 100);
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "connections"), 9u);
  EXPECT_EQ(json_u64(report, "errors"), 0u);
  EXPECT_EQ(json_u64(report, "handshake_failures"), 0u);
}

TEST(WebSocket, VolleysClientAndServerEchoEveryByteIncludingLargeMessages) {
  TempDir dir;
  EchoServer server(dir, {"--proto", "ws", "-t", "2"});
  expect_clean_run(run_client(dir, server.port(), {"--proto", "ws", "-c", "20", "-t", "2", "-m", "1000", "-s", "32",
                                                        "-z", "0.5"}),
                   32);
  // Messages over the 1 MiB a write is cut into, one at a time.
  expect_clean_run(run_client(dir, server.port(), {"--proto", "ws", "-c", "1", "--rtt", "-s", "3000000", "-z", "0.3"}),
                   3000000);
  const auto report = server.stop();
  EXPECT_EQ(json_u64(report, "connections"), 21u);
  EXPECT_EQ(json_u64(report, "errors"), 0u);
}

// Volley's client against Beast's server: the upgrade, the masking and the close as another implementation reads them.
TEST(WebSocket, VolleysClientTalksToAnIndependentServer) {
  TempDir dir;
  asio::io_context io;
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  const int port = acceptor.local_endpoint().port();
  constexpr int kClients = 3;
  std::vector<std::thread> sessions;
  std::atomic<int> clean_closes{0};
  std::thread accepting([&] {
    for (int i = 0; i < kClients; ++i) {
      tcp::socket socket = acceptor.accept();
      sessions.emplace_back([&clean_closes, socket = std::move(socket)]() mutable {
        websocket::stream<tcp::socket> ws(std::move(socket));
        const Deadline deadline(ws.next_layer().native_handle(), 60s);
        beast::error_code ec;
        ws.accept(ec);
        if (ec) return;
        ws.binary(true);
        beast::flat_buffer buffer;
        for (;;) {
          ws.read(buffer, ec);
          if (ec) break;
          ws.write(buffer.data(), ec);
          if (ec) break;
          buffer.consume(buffer.size());
        }
        if (ec == websocket::error::closed && ws.reason().code == websocket::close_code::normal) ++clean_closes;
      });
    }
  });
  const auto r = run_client(dir, port, {"--proto", "ws", "-c", std::to_string(kClients), "-m", "50", "-s", "200",
                                             "-z", "0.5"});
  accepting.join();
  for (auto& s : sessions) s.join();
  expect_clean_run(r, 200);
  EXPECT_EQ(clean_closes.load(), kClients);  // each closed with 1000, as a client should
}

TEST(WebSocket, TheGnbTargetAnswersEachFrameWithOneMessage) {
  TempDir dir;
  ListeningServer target(dir, {"target", "-p", "0", "-t", "1", "--json", "--no-progress", "--ws", "--reply", "ack"},
                         "target");
  {
    BeastClient client(target.port());
    const Deadline deadline(client.ws.next_layer().native_handle(), 60s);
    // Three control frames in one message, then one frame across two messages: a stream of frames.
    std::vector<std::byte> stream;
    for (std::uint32_t id : {7u, 8u, 9u, 10u}) {
      std::array<std::byte, 8> body{};
      for (int i = 0; i < 4; ++i) body[i] = std::byte{static_cast<unsigned char>(id >> (24 - 8 * i))};
      std::array<std::byte, gnb::kHeaderSize + 8> frame{};
      gnb::encode_frame(gnb::MessageType::control, body, frame);
      stream.insert(stream.end(), frame.begin(), frame.end());
    }
    client.ws.write(asio::buffer(stream.data(), 3 * 14));
    client.ws.write(asio::buffer(stream.data() + 42, 5));
    client.ws.write(asio::buffer(stream.data() + 47, 9));
    for (std::uint32_t id : {7u, 8u, 9u, 10u}) {
      beast::flat_buffer buffer;
      client.ws.read(buffer);
      const auto expected = gnb::make_ack_frame({id});
      ASSERT_EQ(buffer.size(), expected.size());  // one ack frame per message
      EXPECT_EQ(std::memcmp(buffer.data().data(), expected.data(), expected.size()), 0) << id;
    }
    client.ws.close(websocket::close_code::normal);
  }
  const auto report = target.stop();
  EXPECT_EQ(json_u64(report.at("replies").as_object(), "ack"), 4u) << boost::json::serialize(report);
}

TEST(WebSocket, CheckedFramePingPongRunsOverWebSocketAndTls) {
  TempDir dir;
  const std::string certs = make_certs(dir);
  for (const bool tls : {false, true}) {
    std::vector<std::string> server_args{"--ws", "--no-progress"};
    std::vector<std::string> client_args{bin("volley"), "pingpong", "--ws", "--json", "-g", "1",
                                         "--sizes", "1,1000,100000", "-n", "50", "--warmup", "5"};
    if (tls) {
      server_args.insert(server_args.end(), {"--tls", "--cert", certs + "/server.pem", "--key", certs + "/server.key"});
      client_args.insert(client_args.end(), {"--tls", "--ca", certs + "/ca.pem"});
    }
    RunningPingPongServer server(dir, server_args, 0, tls ? "pingpong-server-wss" : "pingpong-server-ws");
    client_args.insert(client_args.end(), {"-p", std::to_string(server.port())});
    ChildProcess client(client_args, dir.file(tls ? "pingpong-wss" : "pingpong-ws"));
    ASSERT_EQ(client.wait_for(60s).value_or(-1), 0) << client.stderr_text();
    const auto report = server.stop();
    EXPECT_EQ(json_u64(report, "messages_in"), 3 * 55u) << boost::json::serialize(report);
    EXPECT_EQ(json_u64(report, "protocol_errors"), 0u) << boost::json::serialize(report);
  }
}

TEST(WebSocket, RpcCallsGoOverWebSocketOneFramePerMessage) {
  TempDir dir;
  ListeningServer server(dir, {"rpc-server", "-p", "0", "--json", "--ws"}, "rpc-server");
  ChildProcess bench({bin("volley"), "rpc-bench", "--ws", "--port", std::to_string(server.port()), "--seconds", "0.3",
                      "--mode", "request", "--in-flight", "8", "--json"},
                     dir.file("rpc-bench"));
  ASSERT_EQ(bench.wait_for(60s).value_or(-1), 0) << bench.stderr_text();
  const auto result = boost::json::parse(bench.stdout_text()).as_object().at("results").at(0).as_object();
  EXPECT_EQ(result.at("error").as_string(), "");
  const std::uint64_t round_trips = json_u64(result, "round_trips");
  EXPECT_GT(round_trips, 100u);
  EXPECT_GE(json_u64(server.stop(), "calls"), round_trips);
}

}  // namespace
}  // namespace volley::test
