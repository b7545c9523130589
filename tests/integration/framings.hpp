#pragma once
// Tests of session behaviour run for each framing a session speaks (checked
// frames, gNB frames, RPC frames) and each link (TCP, TLS). A Framing says how
// to carry a piece of text as one of its messages, how to read it back, and
// what a bad frame of it looks like.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <volley/gnb/session_codec.hpp>
#include <volley/net/session_codec.hpp>
#include <volley/rpc/frame.hpp>
#include <volley/rpc/session_codec.hpp>
#include <volley/wire/checked.hpp>
#include <volley/gnb/protocol.hpp>

#include "links.hpp"

namespace volley::test {

enum class Framing { checked, gnb, rpc };

inline const char* framing_flag(Framing f) {  // pingpong-server --framing
  return f == Framing::checked ? "checked" : f == Framing::gnb ? "gnb" : "rpc";
}

inline std::unique_ptr<net::SessionCodec> make_codec(Framing f) {
  switch (f) {
    case Framing::checked: return net::make_checked_codec(1 << 20);
    case Framing::gnb: return gnb::make_gnb_codec();
    case Framing::rpc: break;
  }
  return rpc::make_rpc_codec();
}

inline std::span<const std::byte> text_bytes(std::string_view text) { return std::as_bytes(std::span(text.data(), text.size())); }

// `text` as one message, as Session::send takes it: the payload of a checked
// frame, or a whole gNB data frame, or a whole RPC frame (request id 1).
inline std::vector<std::byte> message(Framing f, std::string_view text) {
  const auto body = text_bytes(text);
  std::vector<std::byte> m;
  if (f == Framing::checked) return {body.begin(), body.end()};
  if (f == Framing::gnb) {
    m.resize(gnb::kHeaderSize);
    gnb::write_header(m.data(), static_cast<std::uint16_t>(gnb::MessageType::data),
                            static_cast<std::uint32_t>(body.size()));
  } else {
    m.resize(rpc::kHeaderSize);
    rpc::write_header(m.data(), 7, static_cast<std::uint32_t>(body.size()), 1);
  }
  m.insert(m.end(), body.begin(), body.end());
  return m;
}

// The text back out of a message a session delivered.
inline std::string text_of(Framing f, std::span<const std::byte> m) {
  const std::size_t skip = f == Framing::checked ? 0 : f == Framing::gnb ? gnb::kHeaderSize : rpc::kHeaderSize;
  return {reinterpret_cast<const char*>(m.data()) + skip, m.size() - skip};
}

// `text`'s message as it goes on the wire (what a session writes for it).
inline std::vector<std::byte> on_the_wire(Framing f, std::string_view text) {
  std::vector<std::byte> m = message(f, text);
  if (f != Framing::checked) return m;  // gNB and RPC messages are whole frames already
  std::vector<std::byte> frame(wire::checked::kHeaderSize + m.size());
  wire::checked::encode(wire::checked::FrameType::message, m, frame);
  return frame;
}

// A frame the protocol refuses. Checked: a wrong XOR; gNB: an ack whose body
// is too short for its layout; both skipped with the stream in step. RPC: a
// body size over the maximum, which cannot be skipped: the session closes.
inline std::vector<std::byte> bad_frame(Framing f) {
  if (f == Framing::checked) {
    std::vector<std::byte> frame = on_the_wire(f, "garbled");
    frame[4] ^= std::byte{0xFF};
    return frame;
  }
  if (f == Framing::gnb) {
    std::vector<std::byte> frame(gnb::kHeaderSize + 2, std::byte{0x11});
    gnb::write_header(frame.data(), static_cast<std::uint16_t>(gnb::MessageType::ack), 2);
    return frame;
  }
  std::vector<std::byte> frame(rpc::kHeaderSize);
  rpc::write_header(frame.data(), 9, 0x7FFFFFFF, 1);
  return frame;
}
inline bool bad_frame_is_skipped(Framing f) { return f != Framing::rpc; }

using Over = std::tuple<Framing, Link>;

inline std::string over_name(const testing::TestParamInfo<Over>& info) {
  const Framing f = std::get<0>(info.param);
  return std::string(f == Framing::checked ? "Checked" : f == Framing::gnb ? "Gnb" : "Rpc") +
         link_text(std::get<1>(info.param));
}

// A test fixture for the pair: which framing and link, and the flags that make
// a pingpong-server speak them.
class FramingAndLink : public testing::TestWithParam<Over> {
 protected:
  Framing framing() const { return std::get<0>(GetParam()); }
  Link link() const { return std::get<1>(GetParam()); }
  std::vector<std::string> server_args(std::vector<std::string> args) const {
    args.insert(args.end(), {"--framing", framing_flag(framing())});
    for (auto& f : server_flags(link())) args.push_back(f);
    if (is_local(link())) args.insert(args.end(), {"--unix", unix_flag_});
    if (link() == Link::shm) args.push_back("--shm");
    return args;
  }
  // Where a client finds a server that server_args() made (a restarted one
  // too: the same Unix socket all through the test).
  std::string host() const { return is_local(link()) ? unix_address_of(unix_flag_) : "127.0.0.1"; }

 private:
  std::string unix_flag_ = fresh_unix_flag();
};

inline auto every_framing_and_link() {
  return testing::Combine(testing::Values(Framing::checked, Framing::gnb, Framing::rpc),
                          testing::Values(Link::tcp, Link::tls, Link::unix_socket, Link::shm));
}

}  // namespace volley::test
