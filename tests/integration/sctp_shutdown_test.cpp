// SCTP's shutdown handshake ends with one packet nobody acknowledges
// (SHUTDOWN-COMPLETE), and any of its packets can be lost. arq-send and
// arq-recv must still both end, successfully, with every message delivered:
// a relay in this test drops exactly the packets of the handshake chosen by
// each case, so the outcome does not depend on chance.
#include <array>
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/json.hpp>

#include "child_process.hpp"
#include "target_fixture.hpp"

using namespace volley::test;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using asio::ip::udp;

namespace {

// SCTP chunk types (RFC 9260 section 3.2).
constexpr std::uint8_t kShutdown = 7;
constexpr std::uint8_t kShutdownAck = 8;
constexpr std::uint8_t kShutdownComplete = 14;

// Whether an SCTP packet carried in a datagram holds a chunk of `type`: the
// chunks follow the 12-byte common header, each [type][flags][length u16 BE]
// padded to 4 bytes.
bool has_chunk(const std::uint8_t* packet, std::size_t n, int type) {
  for (std::size_t at = 12; at + 4 <= n;) {
    if (packet[at] == type) return true;
    const std::size_t length = (std::size_t{packet[at + 2]} << 8) | packet[at + 3];
    if (length < 4) return false;
    at += (length + 3) & ~std::size_t{3};
  }
  return false;
}

// Forwards datagrams between the sender (the address heard that is not the
// receiver) and the receiver, dropping the first `drop_up` packets that hold
// a chunk of `up_type` on the way to the receiver, and likewise the first
// `drop_down` with `down_type` on the way back.
class ChunkDroppingRelay {
 public:
  ChunkDroppingRelay(udp::endpoint receiver, int up_type, int drop_up, int down_type, int drop_down)
      : socket_(loop_, udp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        receiver_(receiver),
        up_type_(up_type),
        down_type_(down_type),
        drop_up_(drop_up),
        drop_down_(drop_down) {
    receive();
    thread_ = std::thread([this] { loop_.run(); });
  }
  ~ChunkDroppingRelay() {
    loop_.stop();
    thread_.join();
  }
  std::uint16_t port() const { return socket_.local_endpoint().port(); }
  int dropped() const { return dropped_; }
  int seen(std::uint8_t type) const { return seen_[type]; }

 private:
  void receive() {
    socket_.async_receive_from(asio::buffer(buffer_), from_, [this](const boost::system::error_code& ec, std::size_t n) {
      if (ec) return;
      const bool up = from_ != receiver_;
      if (up) sender_ = from_;
      for (int type : {kShutdown, kShutdownAck, kShutdownComplete})
        if (has_chunk(buffer_.data(), n, type)) seen_[type] += 1;
      int& budget = up ? drop_up_ : drop_down_;
      if (budget > 0 && has_chunk(buffer_.data(), n, up ? up_type_ : down_type_)) {
        budget -= 1;
        dropped_ += 1;
      } else if (up || sender_.port() != 0) {
        boost::system::error_code ignored;
        socket_.send_to(asio::buffer(buffer_.data(), n), up ? receiver_ : sender_, 0, ignored);
      }
      receive();
    });
  }

  asio::io_context loop_;
  udp::socket socket_;
  udp::endpoint receiver_, sender_, from_;
  int up_type_, down_type_;
  int drop_up_, drop_down_;
  std::atomic<int> dropped_{0};
  std::array<std::atomic<int>, 256> seen_{};
  std::array<std::uint8_t, 65536> buffer_{};
  std::thread thread_;
};

struct ShutdownLoss {
  std::string name;
  int up_type, drop_up, down_type, drop_down;
  int repeated_type;  // the chunk that must have been sent again to end the handshake (-1: none)
};

class SctpShutdown : public ::testing::TestWithParam<ShutdownLoss> {};

TEST_P(SctpShutdown, BothEndsFinishWithEverythingDeliveredWhenAHandshakePacketIsLost) {
  const ShutdownLoss& c = GetParam();
  TempDir dir;
  ChildProcess recv({bin("volley"), "arq-recv", "--listen", "127.0.0.1:0", "--port-file", dir.file("recv.port"),
                     "--protocol", "sctp", "--echo", "--json"},
                    dir.file("recv"));
  const int recv_port = wait_for_port_file(dir.file("recv.port"), recv);
  ASSERT_GT(recv_port, 0) << recv.stderr_text();
  ChunkDroppingRelay relay({asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(recv_port)}, c.up_type,
                           c.drop_up, c.down_type, c.drop_down);
  ChildProcess send({bin("volley"), "arq-send", "--to", "127.0.0.1:" + std::to_string(relay.port()), "--protocol",
                     "sctp", "--count", "50", "--interval", "1", "--size", "100", "--echo", "--json"},
                    dir.file("send"));
  // Bounds far above what each end waits for the lost packet (a retransmission
  // timeout of 1 s, the 3 s the responder waits for a quiet peer).
  ASSERT_EQ(send.wait_for(60s).value_or(-1), 0) << send.stdout_text() << send.stderr_text() << "\nreceiver so far:\n"
                                                 << recv.stdout_text() << recv.stderr_text();
  ASSERT_EQ(recv.wait_for(30s).value_or(-1), 0) << recv.stdout_text() << recv.stderr_text();
  EXPECT_EQ(relay.dropped(), c.drop_up + c.drop_down);  // the loss this case is about happened
  EXPECT_GE(relay.seen(kShutdown), 1);
  if (c.repeated_type >= 0) {
    EXPECT_GE(relay.seen(static_cast<std::uint8_t>(c.repeated_type)), 2);
  }
  const auto s = boost::json::parse(send.stdout_text()).as_object();
  EXPECT_EQ(s.at("round_trip").at("count").as_int64(), 50);
  const auto r = boost::json::parse(report_text(recv.stdout_text())).as_object();
  EXPECT_EQ(r.at("delay").at("count").as_int64(), 50);
  EXPECT_EQ(r.at("error").as_string(), "");
}

// No loss; the last packet lost (the receiver cannot learn the handshake
// ended); the receiver's answer lost once (whichever end's retransmission
// timer fires first, the answer comes again); the sender's SHUTDOWN lost once
// (its retransmission timer repeats it).
INSTANTIATE_TEST_SUITE_P(Losses, SctpShutdown,
                         ::testing::Values(ShutdownLoss{"none", -1, 0, -1, 0, -1},
                                           ShutdownLoss{"shutdown_complete", kShutdownComplete, 1, -1, 0, -1},
                                           ShutdownLoss{"shutdown_ack", -1, 0, kShutdownAck, 1, kShutdownAck},
                                           ShutdownLoss{"shutdown", kShutdown, 1, -1, 0, kShutdown}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
