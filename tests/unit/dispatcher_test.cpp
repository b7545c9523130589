// dispatch::Dispatcher: typed handlers per message id for any framing (gNB
// frames, RPC frames, an id leading a payload), and what it counts when a
// message cannot be dispatched.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <volley/dispatch/dispatcher.hpp>
#include <volley/rpc/protocol.hpp>
#include <volley/serial/binary.hpp>
#include <volley/gnb/dispatch_protocol.hpp>
#include <volley/gnb/protocol.hpp>
#include <volley/gnb/session_codec.hpp>
#include <volley/rpc/session_codec.hpp>

namespace volley::dispatch {
namespace {

using gnb::AckChecksumView;
using gnb::AckView;
using gnb::ControlView;
using gnb::DataView;
using gnb::GnbProtocol;
using gnb::NackView;

std::vector<std::byte> gnb_frame(std::uint16_t type, std::vector<std::byte> body) {
  std::vector<std::byte> f(gnb::kHeaderSize);
  gnb::write_header(f.data(), type, static_cast<std::uint32_t>(body.size()));
  f.insert(f.end(), body.begin(), body.end());
  return f;
}
std::vector<std::byte> be32(std::uint32_t v) {
  return {std::byte(v >> 24), std::byte(v >> 16), std::byte(v >> 8), std::byte(v)};
}
std::vector<std::byte> join(std::vector<std::byte> a, const std::vector<std::byte>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
constexpr auto type_of = [](gnb::MessageType t) { return static_cast<std::uint16_t>(t); };

// What a connection's handlers saw: the context every handler gets.
struct Seen {
  std::vector<std::string> log;
};

TEST(Dispatcher, GnbFramesReachTheirViewsAndWhatCannotBeDispatchedIsCounted) {
  Dispatcher<GnbProtocol, Seen> d;
  d.on<ControlView>(type_of(gnb::MessageType::control),
                    [](Seen& s, const ControlView& v) { s.log.push_back("control " + std::to_string(v.transaction_id)); })
      .on<AckView>(type_of(gnb::MessageType::ack),
                   [](Seen& s, const AckView& v) { s.log.push_back("ack " + std::to_string(v.transaction_id)); })
      .on<NackView>(type_of(gnb::MessageType::nack), [](Seen& s, const NackView& v) {
        s.log.push_back("nack " + std::to_string(v.transaction_id) + " cause " + std::to_string(v.cause));
      })
      .on<DataView>(type_of(gnb::MessageType::data),
                    [](Seen& s, const DataView& v) { s.log.push_back("data " + std::to_string(v.body.size())); })
      .on_unknown([](Seen& s, const Envelope<std::uint16_t>& e) { s.log.push_back("unknown " + std::to_string(e.id)); });
  Seen seen;
  EXPECT_EQ(d.dispatch(gnb_frame(type_of(gnb::MessageType::control), join(be32(7), std::vector<std::byte>(8))), seen),
            Outcome::handled);
  EXPECT_EQ(d.dispatch(gnb_frame(type_of(gnb::MessageType::ack), be32(7)), seen), Outcome::handled);
  EXPECT_EQ(d.dispatch(gnb_frame(type_of(gnb::MessageType::nack), join(be32(8), {std::byte{0}, std::byte{3}})), seen),
            Outcome::handled);
  EXPECT_EQ(d.dispatch(gnb_frame(type_of(gnb::MessageType::data), std::vector<std::byte>(1200)), seen), Outcome::handled);
  // An ack body too short for its transaction id: the view refuses it.
  EXPECT_EQ(d.dispatch(gnb_frame(type_of(gnb::MessageType::ack), {std::byte{1}, std::byte{2}}), seen),
            Outcome::undecodable);
  // No handler for ack-with-checksum: the fallback sees it.
  EXPECT_EQ(d.dispatch(gnb_frame(type_of(gnb::MessageType::ack_checksum), join(be32(9), be32(0xABCD))), seen),
            Outcome::unknown_id);
  // Shorter than a header, and a length field that disagrees with the message.
  EXPECT_EQ(d.dispatch(std::vector<std::byte>(3), seen), Outcome::unopened);
  auto lying = gnb_frame(type_of(gnb::MessageType::ack), be32(1));
  lying.pop_back();
  EXPECT_EQ(d.dispatch(lying, seen), Outcome::unopened);

  EXPECT_EQ(seen.log, (std::vector<std::string>{"control 7", "ack 7", "nack 8 cause 3", "data 1200", "unknown 4100"}));
  EXPECT_EQ(d.stats().handled, 4u);
  EXPECT_EQ(d.stats().undecodable, 1u);
  EXPECT_EQ(d.stats().unknown_id, 1u);
  EXPECT_EQ(d.stats().unopened, 2u);
  EXPECT_TRUE(d.handles(type_of(gnb::MessageType::data)));
  EXPECT_FALSE(d.handles(type_of(gnb::MessageType::ack_checksum)));
}

// The user's own structs, decoded by volley::serial, behind a one-byte id.
struct Order {
  std::string symbol;
  std::uint32_t quantity;
  std::int64_t price_ticks;
};
struct Cancel {
  std::uint64_t order_id;
};

std::vector<std::byte> with_id(std::uint8_t id, const auto& message) {
  std::vector<std::byte> out{std::byte{id}};
  serial::encode_append(message, out);
  return out;
}

TEST(Dispatcher, TheUsersStructsAreDecodedBySerialAndARegistrationCanBeReplaced) {
  Dispatcher<LeadingId<std::uint8_t>> d;
  std::vector<Order> orders;
  std::vector<std::uint64_t> cancels;
  d.on<Order>(1, [&](const Order& o) { orders.push_back(o); });
  d.on<Cancel>(2, [&](const Cancel&) { cancels.push_back(0); });
  d.on<Cancel>(2, [&](const Cancel& c) { cancels.push_back(c.order_id); });  // replaces the first
  d.on<std::span<const std::byte>>(3, [&](std::span<const std::byte> raw) { cancels.push_back(raw.size()); });

  EXPECT_EQ(d.dispatch(with_id(1, Order{"VOLY", 100, 12345})), Outcome::handled);
  EXPECT_EQ(d.dispatch(with_id(1, Order{"A much longer symbol than before", 7, -1})), Outcome::handled);
  EXPECT_EQ(d.dispatch(with_id(2, Cancel{42})), Outcome::handled);
  EXPECT_EQ(d.dispatch(with_id(3, Cancel{42})), Outcome::handled);
  auto truncated = with_id(1, Order{"VOLY", 100, 12345});
  truncated.resize(truncated.size() - 3);
  EXPECT_EQ(d.dispatch(truncated), Outcome::undecodable);
  auto trailing = with_id(2, Cancel{1});
  trailing.push_back(std::byte{0});
  EXPECT_EQ(d.dispatch(trailing), Outcome::undecodable) << "serial refuses trailing bytes";
  EXPECT_EQ(d.dispatch(std::span<const std::byte>{}), Outcome::unopened);
  EXPECT_EQ(d.dispatch(with_id(9, Cancel{1})), Outcome::unknown_id);

  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(orders[0].symbol, "VOLY");
  EXPECT_EQ(orders[0].price_ticks, 12345);
  EXPECT_EQ(orders[1].symbol, "A much longer symbol than before");
  EXPECT_EQ(orders[1].quantity, 7u);
  EXPECT_EQ(cancels, (std::vector<std::uint64_t>{42, 8}));
  EXPECT_EQ(d.stats().handled, 4u);
  EXPECT_EQ(d.stats().undecodable, 2u);
}

TEST(Dispatcher, RpcFramesAreDispatchedByMessageId) {
  Dispatcher<rpc::RpcProtocol> d;
  std::vector<std::string> got;
  d.on<Order>(10, [&](const Order& o) { got.push_back(o.symbol); });
  const auto frame = [](std::uint32_t id, const auto& body) {
    std::vector<std::byte> out(rpc::kHeaderSize);
    serial::encode_append(body, out);
    rpc::write_header(out.data(), 5, static_cast<std::uint32_t>(out.size() - rpc::kHeaderSize), id);
    return out;
  };
  EXPECT_EQ(d.dispatch(frame(10, Order{"X", 1, 2})), Outcome::handled);
  EXPECT_EQ(d.dispatch(frame(11, Order{"Y", 1, 2})), Outcome::unknown_id);
  auto short_body = frame(10, Order{"Z", 1, 2});
  short_body.pop_back();  // the size field now disagrees
  EXPECT_EQ(d.dispatch(short_body), Outcome::unopened);
  EXPECT_EQ(got, (std::vector<std::string>{"X"}));
}

// A session's message comes with the id and body its codec read: the
// dispatcher takes them as they are and reads no header again.
TEST(Dispatcher, ASessionsMessageIsDispatchedByTheIdItsCodecRead) {
  Dispatcher<GnbProtocol, Seen> d;
  d.on<AckView>(type_of(gnb::MessageType::ack),
                [](Seen& s, const AckView& v) { s.log.push_back("ack " + std::to_string(v.transaction_id)); })
      .on<NackView>(type_of(gnb::MessageType::nack),
                    [](Seen& s, const NackView& v) { s.log.push_back("nack " + std::to_string(v.transaction_id)); });
  Seen seen;

  // Through the gNB session codec, as a session hands it on.
  const auto codec = gnb::make_gnb_codec();
  const auto ack = gnb_frame(type_of(gnb::MessageType::ack), be32(7));
  const auto in = codec->prepare();
  std::copy(ack.begin(), ack.end(), in.begin());
  codec->commit(ack.size());
  const net::Inbound got = codec->next();
  ASSERT_EQ(got.kind, net::Inbound::Kind::message);
  EXPECT_EQ(got.message.id, type_of(gnb::MessageType::ack));
  EXPECT_EQ(got.message.body.size(), 4u);
  EXPECT_EQ(d.dispatch(got.message, seen), Outcome::handled);

  // The id is the codec's, not the header's again: the same bytes under
  // another id reach that id's handler.
  net::Message relabelled = got.message;
  relabelled.id = type_of(gnb::MessageType::nack);
  relabelled.body = std::span(ack).subspan(gnb::kHeaderSize);
  relabelled.bytes = ack;
  EXPECT_EQ(d.dispatch(relabelled, seen), Outcome::undecodable) << "a nack body needs 6 bytes";

  // A gNB frame carried as another framing's payload (body = bytes, id 0) is opened from its bytes.
  const net::Message carried{.bytes = ack, .body = ack};
  EXPECT_EQ(d.dispatch(carried, seen), Outcome::handled);
  const net::Message empty{};
  EXPECT_EQ(d.dispatch(empty, seen), Outcome::unopened);
  EXPECT_EQ(seen.log, (std::vector<std::string>{"ack 7", "ack 7"}));
}

TEST(Dispatcher, AnRpcSessionsMessageCarriesItsIdAndSequence) {
  Dispatcher<rpc::RpcProtocol> d;
  std::vector<std::string> got;
  d.on<Order>(10, [&](const Order& o) { got.push_back(o.symbol); });
  std::vector<std::byte> frame(rpc::kHeaderSize);
  serial::encode_append(Order{"X", 1, 2}, frame);
  rpc::write_header(frame.data(), 5, static_cast<std::uint32_t>(frame.size() - rpc::kHeaderSize), 10);

  const auto codec = rpc::make_rpc_codec();
  const auto in = codec->prepare();
  std::copy(frame.begin(), frame.end(), in.begin());
  codec->commit(frame.size());
  const net::Inbound message = codec->next();
  ASSERT_EQ(message.kind, net::Inbound::Kind::message);
  EXPECT_EQ(message.message.id, 10u);
  EXPECT_EQ(message.message.sequence, 5u);
  EXPECT_EQ(message.message.bytes.size(), frame.size());
  EXPECT_EQ(d.dispatch(message.message), Outcome::handled);
  net::Message relabelled = message.message;
  relabelled.id = 11;
  EXPECT_EQ(d.dispatch(relabelled), Outcome::unknown_id);
  EXPECT_EQ(got, (std::vector<std::string>{"X"}));
}

}  // namespace
}  // namespace volley::dispatch
