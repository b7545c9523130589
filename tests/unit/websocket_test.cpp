// WebSocket frames and the opening handshake, byte for byte (RFC 6455's own
// examples where it gives them), with no socket.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <volley/net/websocket.hpp>
#include <volley/wire/websocket.hpp>

#include "bytes.hpp"
#include "volley/net/websocket_handshake.hpp"
#include "volley/net/websocket_output.hpp"
#include "websocket_frames.hpp"

using namespace volley::wire::websocket;
using volley::test::frame;
using volley::test::from_hex;
using volley::test::hex;
using volley::test::kKey;
using volley::test::operator+;

namespace {

struct Decoded {
  std::string data;
  std::vector<Receiver::Event> events;
  std::vector<std::string> controls;  // each control frame's payload
  std::error_code error;
};

// Feeds `stream` `chunk` bytes at a time into a receiver writing to `out_size` bytes of room.
Decoded decode(const std::vector<std::byte>& stream, bool masked_input, std::size_t chunk = 1 << 20,
               std::size_t out_size = 1 << 20, std::uint64_t max_message = 1 << 20) {
  Receiver r(masked_input, max_message);
  Decoded d;
  std::vector<std::byte> out(out_size);
  std::size_t pos = 0;
  while (pos < stream.size()) {
    const std::size_t n = std::min(chunk, stream.size() - pos);
    std::span<const std::byte> in(stream.data() + pos, n);
    while (!in.empty()) {
      const auto result = r.decode(in, out);
      d.data.append(reinterpret_cast<const char*>(out.data()), result.produced);
      in = in.subspan(result.consumed);
      if (result.event != Receiver::Event::none) {
        d.events.push_back(result.event);
        const auto payload = r.control_payload();
        d.controls.emplace_back(reinterpret_cast<const char*>(payload.data()), payload.size());
        if (result.event == Receiver::Event::error) {
          d.error = r.error();
          return d;
        }
        if (result.event == Receiver::Event::close) return d;
        continue;
      }
      if (result.consumed == 0 && result.produced == 0) break;  // needs more input
    }
    pos += n;
  }
  return d;
}

}  // namespace

TEST(WebSocketFrames, HeadersTakeTheShortestLengthForm) {
  std::array<std::byte, kMaxHeaderSize> h{};
  EXPECT_EQ(encode_header(h.data(), true, Opcode::binary, 0), 2u);
  EXPECT_EQ(hex(std::span(h).first(2)), "82 00");
  EXPECT_EQ(encode_header(h.data(), true, Opcode::binary, 125), 2u);
  EXPECT_EQ(hex(std::span(h).first(2)), "82 7d");
  EXPECT_EQ(encode_header(h.data(), false, Opcode::binary, 126), 4u);
  EXPECT_EQ(hex(std::span(h).first(4)), "02 7e 00 7e");
  EXPECT_EQ(encode_header(h.data(), true, Opcode::binary, 65535), 4u);
  EXPECT_EQ(hex(std::span(h).first(4)), "82 7e ff ff");
  EXPECT_EQ(encode_header(h.data(), true, Opcode::binary, 65536), 10u);
  EXPECT_EQ(hex(std::span(h).first(10)), "82 7f 00 00 00 00 00 01 00 00");
  EXPECT_EQ(encode_header(h.data(), true, Opcode::ping, 5, &kKey), 6u);
  EXPECT_EQ(hex(std::span(h).first(6)), "89 85 37 fa 21 3d");
}

// RFC 6455, 5.7: "A single-frame masked text message" ("Hello"), sent here as binary.
TEST(WebSocketFrames, TheRfcsMaskedExampleDecodesToHello) {
  const auto d = decode(from_hex("82 85 37 fa 21 3d 7f 9f 4d 51 58"), true);
  EXPECT_EQ(d.data, "Hello");
  EXPECT_TRUE(d.events.empty());
  EXPECT_EQ(hex(frame(true, Opcode::binary, "Hello", &kKey)), "82 85 37 fa 21 3d 7f 9f 4d 51 58");
}

TEST(WebSocketFrames, AFragmentedMessageWithAPingBetweenItsFramesArrivesWhole) {
  // RFC 6455, 5.7's fragmented example (as binary), with the unmasked ping example between.
  const auto stream = from_hex("02 03 48 65 6c") + from_hex("89 05 48 65 6c 6c 6f") + from_hex("80 02 6c 6f");
  for (std::size_t chunk : {1, 2, 3, 7, 100}) {
    for (std::size_t room : {1, 2, 64}) {
      const auto d = decode(stream, false, chunk, room);
      EXPECT_EQ(d.data, "Hello") << chunk << " " << room;
      ASSERT_EQ(d.events.size(), 1u);
      EXPECT_EQ(d.events[0], Receiver::Event::ping);
      EXPECT_EQ(d.controls[0], "Hello");
    }
  }
}

// Asked to, the receiver stops at every message's end and says how long it
// was (a fragmented one whole, an empty one too), at every cut of the input
// and however little room there is for the payload.
TEST(WebSocketFrames, MessageEndsAreReportedWithTheirSizeWhenAsked) {
  const auto stream = from_hex("02 03 48 65 6c") + from_hex("89 05 48 65 6c 6c 6f") + from_hex("80 02 6c 6f") +
                      from_hex("82 00") + frame(true, Opcode::binary, std::string(300, 'x'), nullptr);
  for (std::size_t chunk : {1, 3, 100, 1000}) {
    for (std::size_t room : {1, 64, 1000}) {
      Receiver r(false, 1 << 20);
      r.report_message_ends(true);
      std::vector<std::uint64_t> sizes;
      std::string data;
      std::vector<std::byte> out(room);
      for (std::size_t pos = 0; pos < stream.size(); pos += chunk) {
        std::span<const std::byte> in(stream.data() + pos, std::min(chunk, stream.size() - pos));
        while (!in.empty()) {
          const auto result = r.decode(in, out);
          data.append(reinterpret_cast<const char*>(out.data()), result.produced);
          in = in.subspan(result.consumed);
          if (result.event == Receiver::Event::message_end) sizes.push_back(r.last_message_size());
          if (result.event == Receiver::Event::none && result.consumed == 0 && result.produced == 0) break;
        }
      }
      EXPECT_EQ(sizes, (std::vector<std::uint64_t>{5, 0, 300})) << chunk << " " << room;
      EXPECT_EQ(data, "Hello" + std::string(300, 'x'));
    }
  }
  // Not asked: the messages run together, no event.
  EXPECT_TRUE(decode(stream, false).events.size() == 1);  // the ping alone
}

// The close code this end sends for each reason it closes (documented in volley/net/websocket.hpp).
TEST(WebSocketFrames, EachReasonToCloseHasItsDocumentedCode) {
  using Goodbye = volley::net::StreamTransport::Goodbye;
  EXPECT_EQ(volley::net::goodbye_code(Goodbye::done), 1000);
  EXPECT_EQ(volley::net::goodbye_code(Goodbye::going_away), 1001);
  EXPECT_EQ(volley::net::goodbye_code(Goodbye::peer_silent), 1008);
  EXPECT_EQ(volley::net::goodbye_code(Goodbye::idle), 1000);
  EXPECT_EQ(volley::net::goodbye_code(Goodbye::slow_consumer), 1008);
  EXPECT_EQ(volley::net::goodbye_code(Goodbye::bad_input), 1008);
}

TEST(WebSocketFrames, LongLengthsRoundTripMaskedAtEveryCut) {
  for (std::size_t size : {0, 1, 125, 126, 65535, 65536, 200000}) {
    std::string payload(size, '\0');
    for (std::size_t i = 0; i < size; ++i) payload[i] = static_cast<char>(i * 31 + 7);
    const auto stream = frame(true, Opcode::binary, payload, &kKey) + frame(true, Opcode::binary, "tail", &kKey);
    for (std::size_t chunk : {1, 13, 4096}) {
      if (chunk == 1 && size > 70000) continue;
      const auto d = decode(stream, true, chunk, 1000);
      EXPECT_EQ(d.data, payload + "tail") << size << " " << chunk;
      EXPECT_FALSE(d.error);
    }
  }
}

TEST(WebSocketFrames, MaskCopyMatchesTheByteByByteDefinitionAtEveryPhase) {
  std::vector<std::byte> from(67), to(67), want(67);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = std::byte(static_cast<unsigned char>(i * 13 + 1));
  for (std::size_t phase = 0; phase < 8; ++phase)
    for (std::size_t n = 0; n <= from.size(); ++n) {
      for (std::size_t i = 0; i < n; ++i) want[i] = from[i] ^ kKey[(phase + i) % 4];
      mask_copy(from.data(), to.data(), n, kKey, phase);
      EXPECT_TRUE(std::equal(to.begin(), to.begin() + static_cast<std::ptrdiff_t>(n), want.begin())) << phase << " " << n;
    }
}

TEST(WebSocketFrames, CloseFramesCarryTheirCodeAndReason) {
  const auto d = decode(frame(true, Opcode::close, std::string("\x03\xe8") + "bye", &kKey), true);
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0], Receiver::Event::close);
  Receiver r(true, 100);
  const auto f = frame(true, Opcode::close, std::string("\x0f\xa0") + "done", &kKey);
  std::array<std::byte, 8> out{};
  EXPECT_EQ(r.decode(f, out).event, Receiver::Event::close);
  EXPECT_EQ(r.close_code(), 4000);
  EXPECT_EQ(r.close_reason(), "done");
  Receiver empty(false, 100);
  EXPECT_EQ(empty.decode(from_hex("88 00"), out).event, Receiver::Event::close);
  EXPECT_EQ(empty.close_code(), close_code::no_status);
}

struct Violation {
  const char* name;
  std::vector<std::byte> stream;
  bool masked_input;
  Errc error;
  std::uint16_t close;
};

TEST(WebSocketFrames, EveryProtocolViolationIsAnErrorWithItsCloseCode) {
  const std::vector<Violation> cases{
      {"rsv1", from_hex("c2 00"), false, Errc::reserved_bits, 1002},
      {"opcode 3", from_hex("83 00"), false, Errc::unknown_opcode, 1002},
      {"opcode 11", from_hex("8b 00"), false, Errc::unknown_opcode, 1002},
      {"ping without fin", from_hex("09 00"), false, Errc::fragmented_control, 1002},
      {"ping of 126", from_hex("89 7e 00 7e"), false, Errc::control_too_long, 1002},
      {"unmasked from a client", from_hex("82 01 41"), true, Errc::unmasked_client_frame, 1002},
      {"masked from a server", frame(true, Opcode::binary, "A", &kKey), false, Errc::masked_server_frame, 1002},
      {"16-bit length of 5", from_hex("82 7e 00 05"), false, Errc::non_minimal_length, 1002},
      {"64-bit length of 5", from_hex("82 7f 00 00 00 00 00 00 00 05"), false, Errc::non_minimal_length, 1002},
      {"64-bit top bit", from_hex("82 7f 80 00 00 00 00 00 00 00"), false, Errc::length_too_large, 1002},
      {"lone continuation", from_hex("80 01 41"), false, Errc::unexpected_continuation, 1002},
      {"new message mid-message", from_hex("02 01 41 82 01 42"), false, Errc::unfinished_message, 1002},
      {"text", from_hex("81 01 41"), false, Errc::text_message, 1003},
      {"over the maximum", from_hex("82 7e 04 01") + std::vector<std::byte>(1025), false, Errc::message_too_big, 1009},
      {"fragments over the maximum", from_hex("02 7e 02 00") + std::vector<std::byte>(512) + from_hex("80 7e 02 01"), false,
       Errc::message_too_big, 1009},
      {"close of 1 byte", from_hex("88 01 03"), false, Errc::bad_close_payload, 1002},
      {"close code 1005", from_hex("88 02 03 ed"), false, Errc::bad_close_code, 1002},
      {"close code 999", from_hex("88 02 03 e7"), false, Errc::bad_close_code, 1002},
      {"close reason not UTF-8", from_hex("88 04 03 e8 c3 28"), false, Errc::close_reason_not_utf8, 1007},
  };
  for (const auto& c : cases) {
    for (std::size_t chunk : {1, 1000}) {
      const auto d = decode(c.stream, c.masked_input, chunk, 4096, 1024);
      EXPECT_EQ(d.error, make_error_code(c.error)) << c.name << " chunk " << chunk;
      EXPECT_EQ(close_code_for(c.error), c.close) << c.name;
    }
  }
  EXPECT_NE(make_error_code(Errc::text_message).message().find("1003"), std::string::npos);
}

// Empty data frames cost the receiver a header each and give nothing: 1024 in
// a row are taken, one more is a flood (1008); a byte between them starts the
// count again, and empty messages count as much as empty fragments.
TEST(WebSocketFrames, AFloodOfEmptyDataFramesIsAnErrorButAByteBetweenThemResetsTheCount) {
  auto repeated = [](const std::vector<std::byte>& unit, std::uint32_t n) {
    std::vector<std::byte> out;
    for (std::uint32_t i = 0; i < n; ++i) out.insert(out.end(), unit.begin(), unit.end());
    return out;
  };
  const auto begin = from_hex("02 01 41");  // a message begun with "A"
  const auto empty = from_hex("00 00");     // an empty continuation
  {
    const auto d = decode(begin + repeated(empty, kMaxEmptyFramesInARow) + from_hex("80 01 42"), false);
    EXPECT_FALSE(d.error);
    EXPECT_EQ(d.data, "AB");
  }
  {
    const auto d = decode(begin + repeated(empty, kMaxEmptyFramesInARow + 1), false);
    EXPECT_EQ(d.error, make_error_code(Errc::empty_frame_flood));
    EXPECT_EQ(close_code_for(Errc::empty_frame_flood), close_code::policy_violation);
  }
  {
    const auto half = repeated(empty, kMaxEmptyFramesInARow / 2 + 1);
    const auto d = decode(begin + half + from_hex("00 01 43") + half + from_hex("80 00"), false);
    EXPECT_FALSE(d.error) << "the byte between reset the count";
    EXPECT_EQ(d.data, "AC");
  }
  {
    const auto d = decode(repeated(from_hex("82 00"), kMaxEmptyFramesInARow + 1), false);
    EXPECT_EQ(d.error, make_error_code(Errc::empty_frame_flood)) << "empty messages";
  }
}

TEST(WebSocketFrames, Utf8ValidationFollowsRfc3629) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("plain"));
  EXPECT_TRUE(is_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(is_utf8("\xc0\xaf"));                            // overlong '/'
  EXPECT_FALSE(is_utf8("\xed\xa0\x80"));                        // a surrogate
  EXPECT_FALSE(is_utf8("\xf4\x90\x80\x80"));                    // past U+10FFFF
  EXPECT_FALSE(is_utf8("\xe2\x82"));                            // cut short
  EXPECT_FALSE(is_utf8("\xff"));
}

namespace detail = volley::net::detail;

TEST(WebSocketHandshake, TheRfcsKeyGetsTheRfcsAcceptValue) {
  EXPECT_EQ(volley::net::websocket_accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(WebSocketHandshake, AValidRequestIsAnsweredWith101AndTheClientAcceptsIt) {
  const std::string key = detail::make_client_key();
  EXPECT_EQ(key.size(), 24u);
  const std::string request = detail::make_upgrade_request("example.com", "/chat", key);
  EXPECT_EQ(detail::http_head_size(std::as_bytes(std::span(request))), request.size());
  EXPECT_EQ(detail::http_head_size(std::as_bytes(std::span(request)).first(request.size() - 1)), 0u);
  const auto answer = detail::answer_upgrade(request, "/chat");
  ASSERT_FALSE(answer.error) << answer.error.message();
  EXPECT_EQ(answer.response.rfind("HTTP/1.1 101 Switching Protocols\r\n", 0), 0u);
  EXPECT_FALSE(detail::check_upgrade_response(answer.response, key));
  EXPECT_EQ(detail::check_upgrade_response(answer.response, detail::make_client_key()),
            make_error_code(volley::net::WebSocketHandshakeErrc::bad_accept));
  EXPECT_EQ(detail::check_upgrade_response("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", key),
            make_error_code(volley::net::WebSocketHandshakeErrc::refused));
}

TEST(WebSocketHandshake, BadRequestsGetTheirStatusAndError) {
  using E = volley::net::WebSocketHandshakeErrc;
  const std::string key = "dGhlIHNhbXBsZSBub25jZQ==";
  const auto request = [&](const std::string& first, const std::string& headers) {
    return first + "\r\nHost: h\r\n" + headers + "\r\n";
  };
  const std::string upgrade = "Upgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n";
  struct Case {
    std::string head;
    E error;
    const char* status;
  };
  const std::vector<Case> cases{
      {"garbage\r\n\r\n", E::malformed_head, "400"},
      {request("GET / HTTP/1.0", upgrade + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n"),
       E::malformed_head, "400"},
      {request("POST / HTTP/1.1", upgrade + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n"), E::not_get,
       "405"},
      {request("GET / HTTP/1.1", "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n"), E::not_an_upgrade,
       "400"},
      {"GET / HTTP/1.1\r\n" + upgrade + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n\r\n", E::no_host,
       "400"},
      {request("GET / HTTP/1.1", upgrade + "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: " + key + "\r\n"),
       E::bad_version, "426"},
      {request("GET / HTTP/1.1", upgrade + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: short==\r\n"), E::bad_key,
       "400"},
      {request("GET /other HTTP/1.1", upgrade + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n"),
       E::unknown_target, "404"},
      // RFC 6455 11.3.1 and 11.3.5: neither header may appear twice. Both were
      // accepted (the first one read) before the count was checked.
      {request("GET / HTTP/1.1", upgrade + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key +
                                     "\r\nSec-WebSocket-Key: " + key + "\r\n"),
       E::bad_key, "400"},
      {request("GET / HTTP/1.1", upgrade + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Version: 13\r\n"
                                           "Sec-WebSocket-Key: " + key + "\r\n"),
       E::bad_version, "426"},
  };
  for (const auto& c : cases) {
    const auto answer = detail::answer_upgrade(c.head, "/");
    EXPECT_EQ(answer.error, make_error_code(c.error)) << c.head;
    EXPECT_EQ(answer.response.substr(9, 3), c.status) << c.head;
  }
  EXPECT_NE(detail::answer_upgrade(cases[5].head, "/").response.find("Sec-WebSocket-Version: 13"), std::string::npos);
  EXPECT_EQ(detail::answer_oversize_head().response.substr(9, 3), "431");
  // Any target when the server names none; header names in any case.
  EXPECT_FALSE(detail::answer_upgrade(request("GET /x?y=1 HTTP/1.1", "upgrade: WebSocket\r\nconnection: upgrade\r\n"
                                                                     "sec-websocket-version: 13\r\nsec-websocket-key: " +
                                                                         key + "\r\n"),
                                      "")
                   .error);
}

std::vector<std::byte> written(volley::net::detail::WebSocketOutput& output) {
  const auto pending = output.pending();
  std::vector<std::byte> bytes(pending.begin(), pending.end());
  output.sent(pending.size());
  return bytes;
}

TEST(WebSocketOutput, AStreamGoesAsMessagesOfAtMostTheLimitAndDecodesBackByteForByte) {
  using volley::net::detail::WebSocketOutput;
  constexpr std::size_t kLimit = WebSocketOutput::kMaxStreamMessage;
  std::string first(kLimit + 10, 'a'), second(kLimit, 'b');  // one gather list, two pieces
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = static_cast<char>('a' + i % 26);
  const std::array<boost::asio::const_buffer, 2> buffers{boost::asio::buffer(first), boost::asio::buffer(second)};
  for (const bool client : {true, false}) {
    WebSocketOutput output(client);
    output.append_stream(buffers, first.size() + second.size());
    const auto bytes = written(output);
    EXPECT_TRUE(output.pending().empty());
    Receiver r(/*masked_input=*/client, 4 * kLimit);
    r.report_message_ends(true);
    std::vector<std::byte> out(first.size() + second.size());
    std::vector<std::uint64_t> sizes;
    std::size_t produced = 0;
    std::span<const std::byte> in(bytes);
    while (!in.empty()) {
      const auto result = r.decode(in, std::span(out).subspan(produced));
      in = in.subspan(result.consumed);
      produced += result.produced;
      if (result.event == Receiver::Event::message_end) sizes.push_back(r.last_message_size());
      ASSERT_NE(result.event, Receiver::Event::error) << r.error().message();
      if (result.consumed == 0 && result.produced == 0 && result.event == Receiver::Event::none) break;
    }
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), produced), first + second) << client;
    EXPECT_EQ(sizes, (std::vector<std::uint64_t>{kLimit, kLimit, 10})) << client;
    // A client's frames carry a mask (the second header byte's top bit), a server's none.
    EXPECT_EQ(std::to_integer<unsigned>(bytes[1]) >> 7, client ? 1u : 0u);
  }
}

TEST(WebSocketOutput, AClientMasksEachFrameWithAKeyOfItsOwn) {
  volley::net::detail::WebSocketOutput output(true);
  const std::string payload(16, 'x');
  output.append_binary(reinterpret_cast<const std::byte*>(payload.data()), payload.size());
  output.append_binary(reinterpret_cast<const std::byte*>(payload.data()), payload.size());
  const auto bytes = written(output);
  ASSERT_EQ(bytes.size(), 2 * (2 + 4 + payload.size()));
  const std::span<const std::byte> key1(bytes.data() + 2, 4), key2(bytes.data() + 2 + 4 + 16 + 2, 4);
  EXPECT_FALSE(std::equal(key1.begin(), key1.end(), key2.begin()));
  const Decoded d = decode(bytes, /*masked_input=*/true);
  EXPECT_EQ(d.data, payload + payload);
  EXPECT_FALSE(d.error);
}

TEST(WebSocketOutput, WhatTheSocketTookLeavesTheRestPendingInOrder) {
  volley::net::detail::WebSocketOutput output(false);
  output.append_raw(std::as_bytes(std::span(std::string_view("HTTP/1.1 101 Switching Protocols\r\n\r\n"))));
  output.append_control(Opcode::ping, std::as_bytes(std::span(std::string_view("hi"))));
  const auto all = std::vector<std::byte>(output.pending().begin(), output.pending().end());
  output.sent(5);  // the socket took five bytes
  ASSERT_EQ(output.pending().size(), all.size() - 5);
  EXPECT_TRUE(std::equal(output.pending().begin(), output.pending().end(), all.begin() + 5));
  output.append_close(close_code::going_away, std::string(200, 'r'));  // queued behind, whole
  const auto rest = written(output);
  EXPECT_TRUE(output.pending().empty());
  const std::size_t head = std::string_view("HTTP/1.1 101 Switching Protocols\r\n\r\n").size();
  const Decoded d = decode(std::vector<std::byte>(all.begin() + static_cast<std::ptrdiff_t>(head), all.end()) +
                               std::vector<std::byte>(rest.begin() + static_cast<std::ptrdiff_t>(all.size() - 5), rest.end()),
                           /*masked_input=*/false);
  ASSERT_EQ(d.events.size(), 2u);
  EXPECT_EQ(d.events[0], Receiver::Event::ping);
  EXPECT_EQ(d.controls[0], "hi");
  EXPECT_EQ(d.events[1], Receiver::Event::close);
  // The reason is cut to what a control frame holds: 125 bytes, the code's two first.
  EXPECT_EQ(d.controls[1].size(), kMaxControlPayload);
}
