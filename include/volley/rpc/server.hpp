#pragma once
// Request/reply server: a typed handler per message id (the handler takes the
// decoded request struct and returns the reply struct). Unknown ids, bodies
// that do not decode and handlers that throw get an error reply with the
// request's sequence, never a silent drop. Register handlers before serving:
// the table is then read by every worker loop without locks.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <volley/net/session.hpp>
#include <volley/net/tcp_connection.hpp>
#include <volley/rpc/frame.hpp>
#include <volley/serial/binary.hpp>

namespace volley::rpc {

// What the sessions of one worker loop saw, written only by that loop (give
// each loop its own and sum them after the loops have stopped).
struct RpcServerStats {
  std::uint64_t sessions = 0;
  std::uint64_t requests = 0;
  std::uint64_t error_replies = 0;  // unknown id, undecodable request, handler failure, reply too large
  net::SessionStats traffic;        // the sessions' own counts, added as each closes
  std::uint64_t closes[net::CloseReason::kKinds] = {};
};

class RpcServer {
 public:
  template <class Request, class Reply, class F>
  void handle(std::uint32_t request_id, std::uint32_t reply_id, F handler) {
    handlers_[request_id] = [reply_id, h = std::move(handler)](std::span<const std::byte> body,
                                                                std::vector<std::byte>& out) -> std::uint32_t {
      Request request{};
      std::error_code ec;
      if (!serial::decode(body, request, ec)) throw BadRequest{ec.message()};
      const Reply reply = h(request);
      out.resize(kHeaderSize + serial::encoded_size(reply));
      serial::encode(reply, std::span(out).subspan(kHeaderSize));
      return reply_id;
    };
  }

  // The protocol side of one accepted connection (for net::Server's factory),
  // without session features: requests answered as they come.
  std::unique_ptr<net::StreamHandler> make_stream_handler() const;
  // The same as a Session (make_rpc_codec): the RPC keepalive as heartbeat and
  // liveness check, idle timeout, protocol-error policy, and backpressure: while
  // the replies queued for a client are over high water, its requests are not
  // read (none is dropped). A reply over `max_body` becomes an error reply.
  // With `stats`, the session counts into it (it must outlive the session).
  // Sessions that share one `stats` from different threads (the thread-pool
  // design: each connection on a strand of its own) also share `stats_mutex`,
  // taken around each count; a reader takes it too.
  std::unique_ptr<net::StreamHandler> make_session(const net::SessionOptions& options,
                                                   std::size_t max_body = kDefaultMaxBody,
                                                   RpcServerStats* stats = nullptr,
                                                   std::mutex* stats_mutex = nullptr) const;

  struct BadRequest {
    std::string reason;
  };
  // Writes the reply frame (header included) for one request into `out`;
  // false when that is an error reply.
  bool answer(std::uint32_t sequence, std::uint32_t message_id, std::span<const std::byte> body,
              std::vector<std::byte>& out) const;

 private:
  using Handler = std::function<std::uint32_t(std::span<const std::byte>, std::vector<std::byte>&)>;
  std::unordered_map<std::uint32_t, Handler> handlers_;
};

// Encodes an error reply frame into `out`.
void make_error_frame(std::uint32_t sequence, ErrorCode code, const std::string& message, std::vector<std::byte>& out);

}  // namespace volley::rpc
