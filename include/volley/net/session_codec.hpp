#pragma once
// What a Session needs of a framing: split the byte stream into messages,
// heartbeats and goodbyes, frame an outgoing message, and say what a heartbeat
// and a goodbye look like.
// One virtual call per frame buys one Session for every framing.
#include <cstddef>
#include <memory>
#include <span>
#include <system_error>

#include <volley/net/message.hpp>

namespace volley::net {

struct Inbound {
  enum class Kind {
    need_more,  // no complete frame buffered
    message,    // payload is the message
    heartbeat,  // liveness only; not a message
    goodbye,    // the peer is draining: finish what is in flight and go elsewhere
    rejected,   // a bad frame was skipped; the stream is still in sync
    failed,     // the stream cannot be trusted any more; the session closes
  };
  Kind kind = Kind::need_more;
  // message: the message, its id and body as the codec read them. rejected and
  // failed: message.bytes are the bad frame's bytes where the framing can
  // delimit them (gNB: the whole rejected frame, or the header that failed),
  // else empty. Valid until the next prepare().
  Message message{};
  std::error_code error{};  // rejected and failed
};

class SessionCodec {
 public:
  virtual ~SessionCodec() = default;
  virtual std::span<std::byte> prepare() = 0;
  virtual void commit(std::size_t n) = 0;
  virtual Inbound next() = 0;
  // next()'s common case, for the session's per-frame loop: a whole, valid
  // message at the head is taken and written to `out` (true). False takes
  // nothing: whatever is at the head (a heartbeat, a bad frame, too few
  // bytes) is next()'s to say. A codec overrides it to skip building an
  // Inbound, and its error_code, for every message; the default leaves every
  // frame to next().
  virtual bool next_message(Message& /*out*/) { return false; }
  // Bytes of an unfinished frame (non-zero when a peer leaves mid-frame).
  virtual std::size_t buffered() const = 0;

  // Writes what goes on the wire before `payload` into `header` and returns its
  // length (kMaxHeader at most); `ec` set when the payload cannot be framed.
  static constexpr std::size_t kMaxHeader = 16;
  virtual std::size_t frame_header(std::span<const std::byte> payload, std::span<std::byte, kMaxHeader> header,
                                   std::error_code& ec) const = 0;
  // Writes the whole frame (header, then payload) into `out`, which holds
  // kMaxHeader + payload.size() bytes, and returns its size; 0 with `ec` set
  // when the payload cannot be framed. The default copies after frame_header();
  // a codec whose header depends on the payload (a checksum) overrides it to
  // compute that during the copy, one pass over the payload instead of two.
  virtual std::size_t write_frame(std::span<const std::byte> payload, std::span<std::byte> out,
                                  std::error_code& ec) const;
  virtual std::span<const std::byte> heartbeat() const = 0;
  // The frame that tells a peer this end is going away (a server draining
  // for a restart): it should finish what it has in flight and reconnect,
  // elsewhere. Empty where the framing has none (docs/PROTOCOL.md lists them).
  virtual std::span<const std::byte> goodbye() const { return {}; }
  // The largest payload a message can carry.
  virtual std::size_t max_payload() const = 0;
};

// The checked frame: payloads are framed with the 5-byte header, heartbeats
// are type 0, and the goodbye is type 2 with an empty payload (a session
// extension: the plain decoder calls type 2 unknown).
std::unique_ptr<SessionCodec> make_checked_codec(std::size_t max_payload);
// Other framings' codecs live with their protocols: gnb::make_gnb_codec
// (volley/gnb/session_codec.hpp), rpc::make_rpc_codec (volley/rpc/session_codec.hpp).

}  // namespace volley::net
