// OutgoingMessages: how a WebSocket server's written bytes become messages,
// read back as a peer would (frame by frame, message by message).
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/buffer.hpp>

#include <volley/net/websocket.hpp>
#include <volley/wire/websocket.hpp>

#include "volley/net/websocket_messages.hpp"
#include "volley/net/websocket_output.hpp"

namespace {

using volley::net::WebSocketOptions;
using volley::net::detail::OutgoingMessages;
using volley::net::detail::WebSocketOutput;
namespace ws = volley::wire::websocket;

// Writes `text` as one gather list of two pieces (split in the middle).
void write(OutgoingMessages& messages, WebSocketOutput& out, const std::string& text, bool receiving = false) {
  const std::size_t half = text.size() / 2;
  const std::array<boost::asio::const_buffer, 2> buffers{boost::asio::buffer(text.data(), half),
                                                         boost::asio::buffer(text.data() + half, text.size() - half)};
  messages.write(buffers, text.size(), receiving, out);
}

// The messages the output holds, as the peer receives them; the output is emptied.
std::vector<std::string> sent_messages(WebSocketOutput& out) {
  const std::vector<std::byte> wire(out.pending().begin(), out.pending().end());
  out.sent(wire.size());
  ws::Receiver receiver(/*masked_input=*/false, 1 << 20);
  receiver.report_message_ends(true);
  std::vector<std::byte> data(wire.size());
  std::vector<std::string> messages;
  std::size_t produced = 0, begin = 0;
  std::span<const std::byte> in(wire);
  while (!in.empty()) {
    const ws::Receiver::Result r = receiver.decode(in, std::span(data).subspan(produced));
    in = in.subspan(r.consumed);
    produced += r.produced;
    EXPECT_NE(r.event, ws::Receiver::Event::error) << receiver.error().message();
    if (r.event == ws::Receiver::Event::message_end) {
      messages.emplace_back(reinterpret_cast<const char*>(data.data()) + begin, produced - begin);
      begin = produced;
    }
    if (r.consumed == 0 && r.event == ws::Receiver::Event::none) break;
  }
  EXPECT_TRUE(in.empty()) << "a frame left incomplete";
  EXPECT_EQ(begin, produced) << "a message left without its end";
  return messages;
}

using Messages = std::vector<std::string>;

TEST(WebSocketOutgoingMessages, WithoutBoundariesEachWriteIsOneMessage) {
  OutgoingMessages messages(WebSocketOptions{});
  WebSocketOutput out(false);
  write(messages, out, "abcdef");
  write(messages, out, "gh");
  EXPECT_EQ(sent_messages(out), (Messages{"abcdef", "gh"}));
  EXPECT_EQ(messages.waiting(), 0u);
}

TEST(WebSocketOutgoingMessages, ProtocolFramesGoOneAMessageOnceWhole) {
  WebSocketOptions options;
  // A frame here: a length byte, then that many bytes.
  options.message_size = [](std::span<const std::byte> b) -> std::size_t {
    if (b.empty()) return 0;
    const std::size_t n = 1 + std::to_integer<std::size_t>(b[0]);
    return n <= b.size() ? n : 0;
  };
  OutgoingMessages messages(options);
  WebSocketOutput out(false);
  write(messages, out, std::string("\x03") + "abc" + "\x04" + "de");  // a frame and a half
  EXPECT_EQ(sent_messages(out), (Messages{"\x03" "abc"}));
  EXPECT_EQ(messages.waiting(), 3u);
  write(messages, out, "f");  // still not whole
  EXPECT_EQ(sent_messages(out), Messages{});
  write(messages, out, std::string("g") + "\x01" + "h");  // its end, and one more
  EXPECT_EQ(sent_messages(out), (Messages{"\x04" "defg", "\x01" "h"}));
  EXPECT_EQ(messages.waiting(), 0u);
}

TEST(WebSocketOutgoingMessages, MirroredMessagesAreAsLongAsTheOnesReceived) {
  WebSocketOptions options;
  options.mirror_incoming_messages = true;
  options.message_size = [](std::span<const std::byte>) -> std::size_t { return 1; };  // mirroring wins
  OutgoingMessages messages(options);
  WebSocketOutput out(false);
  ASSERT_TRUE(messages.received(3));
  ASSERT_TRUE(messages.received(2));
  write(messages, out, "abcd");  // the first echo whole, half the second
  EXPECT_EQ(sent_messages(out), (Messages{"abc"}));
  EXPECT_EQ(messages.waiting(), 1u);
  write(messages, out, "e");
  EXPECT_EQ(sent_messages(out), (Messages{"de"}));
  // Bytes beyond every message received wait while one is arriving ...
  write(messages, out, "xyz", /*receiving=*/true);
  EXPECT_EQ(sent_messages(out), Messages{});
  EXPECT_EQ(messages.waiting(), 3u);
  // ... are that message's echo once it is whole, and what is left beyond it goes as one.
  ASSERT_TRUE(messages.received(2));
  write(messages, out, "w");
  EXPECT_EQ(sent_messages(out), (Messages{"xy", "zw"}));
  EXPECT_EQ(messages.waiting(), 0u);
}

TEST(WebSocketOutgoingMessages, PastTheUnansweredLimitAMessageReceivedIsRefused) {
  WebSocketOptions options;
  options.mirror_incoming_messages = true;
  OutgoingMessages messages(options);
  for (std::size_t i = 0; i < volley::net::kMaxUnansweredMessages; ++i) ASSERT_TRUE(messages.received(1)) << i;
  EXPECT_FALSE(messages.received(1));
  // An echo makes room for one more.
  WebSocketOutput out(false);
  write(messages, out, "a");
  EXPECT_EQ(sent_messages(out), (Messages{"a"}));
  EXPECT_TRUE(messages.received(1));
  EXPECT_FALSE(messages.received(1));
}

}  // namespace
