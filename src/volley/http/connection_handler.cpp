#include <volley/http/connection_handler.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
// GCC 12 under -fsanitize=address warns that Beast's content_length() may
// return an uninitialised boost::optional (boost::none is returned; a false
// positive of -Wmaybe-uninitialized, where the warning points into the header).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#pragma GCC diagnostic pop
#include <fmt/format.h>

#include <volley/wire/detail/stream_buffer.hpp>

namespace volley::http {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

std::string_view reason_phrase(unsigned status) noexcept {
  switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

std::string serialize(const Response& r, bool keep_alive, bool head_request) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n", r.status,
                                reason_phrase(r.status), r.content_type, r.body.size());
  for (const auto& [name, value] : r.headers) out += fmt::format("{}: {}\r\n", name, value);
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  if (!head_request) out += r.body;
  return out;
}

void Responder::operator()(Response response) {
  const auto connection = connection_.lock();
  if (!connection) return;
  asio::post(connection->get_executor(), [connection, handler = handler_, head = head_, r = std::move(response)] {
    handler->respond(*connection, r, head);  // the connection owns the handler: alive while `connection` is
  });
}

// The read buffer and Beast's parser for the request in progress (one at a time).
struct ConnectionHandler::Parser {
  wire::detail::StreamBuffer buffer{4 * 1024, 64 * 1024};
  std::optional<bhttp::request_parser<bhttp::string_body>> request;
};

ConnectionHandler::ConnectionHandler(const Handler& handler, Limits limits, Stats& stats)
    : handler_(handler),
      limits_(limits),
      stats_(stats),
      parser_(std::make_unique<Parser>()),
      idle_since_(std::chrono::steady_clock::now().time_since_epoch().count()) {}

ConnectionHandler::~ConnectionHandler() = default;

std::span<std::byte> ConnectionHandler::read_buffer() { return parser_->buffer.prepare(); }

void ConnectionHandler::on_data(net::TcpConnection& connection, std::size_t n) {
  parser_->buffer.commit(n);
  // After a refusal the connection reads on until the peer's end (so the
  // kernel does not reset it before the answer is read); that input is dropped.
  if (finished_) return parser_->buffer.clear();
  parse_buffered(connection);
}

void ConnectionHandler::parse_buffered(net::TcpConnection& connection) {
  while (!waiting_ && !finished_) {
    const auto in = parser_->buffer.readable();
    if (in.empty()) return;
    auto& p = parser_->request;
    if (!p) {
      p.emplace();
      p->eager(true);
      p->header_limit(static_cast<std::uint32_t>(limits_.header_bytes));
      p->body_limit(limits_.body_bytes);
    }
    boost::system::error_code ec;
    const std::size_t used = p->put(asio::buffer(in.data(), in.size()), ec);
    parser_->buffer.consume(used);
    if (ec == bhttp::error::need_more) return arm_request_deadline(connection);  // the rest is still to come
    if (ec == bhttp::error::header_limit) return refuse(connection, 431, "request header over the limit");
    if (ec == bhttp::error::body_limit) return refuse(connection, 413, "request body over the limit");
    if (ec == bhttp::error::bad_transfer_encoding) return refuse(connection, 501, "transfer encoding not supported");
    if (ec) return refuse(connection, 400, ec.message());
    if (!p->is_done()) {
      if (used == 0) return arm_request_deadline(connection);
      continue;
    }
    auto message = p->release();
    p.reset();
    if (request_deadline_) request_deadline_->expires_at(std::chrono::steady_clock::time_point::min());  // disarmed
    // The parser decodes chunked bodies; a request in any other coding cannot be read.
    if (const auto coding = message[bhttp::field::transfer_encoding];
        !coding.empty() && !boost::beast::iequals(coding, "chunked"))
      return refuse(connection, 501, "transfer encoding not supported");
    Request request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    request.version = message.version();
    request.keep_alive = message.keep_alive();
    for (const auto& field : message) request.headers.emplace_back(field.name_string(), field.value());
    request.body = std::move(message.body());
    stats_.requests.fetch_add(1, std::memory_order_relaxed);
    set_idle_since(std::chrono::steady_clock::time_point::max());
    waiting_ = true;
    keep_alive_ = request.keep_alive && !draining_;
    connection.pause_reading();  // the next request waits in the socket until this one is answered
    handler_(request, Responder(connection.shared_from_this(), this, request.method == "HEAD"));
  }
}

void ConnectionHandler::respond(net::TcpConnection& connection, const Response& response, bool head) {
  if (finished_ || !waiting_ || !connection.open()) return;
  waiting_ = false;
  set_idle_since(std::chrono::steady_clock::now());
  const bool keep_alive = keep_alive_ && !response.close;
  const std::string bytes = serialize(response, keep_alive, head);
  connection.send(std::as_bytes(std::span(bytes)));
  if (!keep_alive) {
    finished_ = true;
    connection.close({net::CloseReason::Kind::local_close, "response with Connection: close"});
    // Read on (input dropped) so the close sees the peer's end, not a reset for unread bytes.
    return connection.resume_reading();
  }
  serve_buffered(connection);
}

void ConnectionHandler::on_drain(net::TcpConnection& connection) {
  draining_ = true;
  if (finished_) return;
  if (waiting_ || parser_->request || !parser_->buffer.readable().empty()) {
    keep_alive_ = false;  // the request under way is answered, with Connection: close
    return;
  }
  finished_ = true;  // between requests: nothing to finish
  connection.close({net::CloseReason::Kind::shutdown, "draining"});
  connection.resume_reading();
}

void ConnectionHandler::on_backpressure(net::TcpConnection& connection, bool full) {
  if (!full && !waiting_ && !finished_) serve_buffered(connection);  // the answers drained: on to the next
}

void ConnectionHandler::serve_buffered(net::TcpConnection& connection) {
  // A peer that pipelines without reading would otherwise have every request
  // buffered here answered into memory; it waits for its answers to drain.
  if (connection.output_full()) return;
  parse_buffered(connection);  // pipelined requests read already
  if (!waiting_ && !finished_) connection.resume_reading();
}

void ConnectionHandler::arm_request_deadline(net::TcpConnection& connection) {
  // Armed once per request, at the read that left it incomplete; each later
  // piece leaves the deadline where it is.
  if (limits_.request_timeout.count() == 0) return;
  if (!request_deadline_) request_deadline_.emplace(connection.get_executor());
  if (request_deadline_->expiry() > std::chrono::steady_clock::now()) return;  // armed for this request already
  request_deadline_->expires_after(limits_.request_timeout);
  request_deadline_->async_wait(
      [this, weak = connection.weak_from_this(), armed = request_deadline_->expiry()](const boost::system::error_code& ec) {
        const auto c = weak.lock();  // the connection owns this handler: checked before `this` is touched
        // A deadline that had expired as its request came whole is stale (disarmed or armed anew since).
        if (ec || !c || finished_ || request_deadline_->expiry() != armed) return;
        stats_.timed_out.fetch_add(1, std::memory_order_relaxed);
        refuse(*c, 408, fmt::format("request not whole within {} ms of its first byte",
                                    limits_.request_timeout.count()));
      });
}

void ConnectionHandler::refuse(net::TcpConnection& connection, unsigned status, std::string_view why) {
  stats_.bad_requests.fetch_add(1, std::memory_order_relaxed);
  finished_ = true;
  Response r;
  r.status = status;
  r.body = std::string(why) + "\n";
  const std::string bytes = serialize(r, false, false);
  connection.send(std::as_bytes(std::span(bytes)));
  connection.close({net::CloseReason::Kind::protocol_error, fmt::format("HTTP {}: {}", status, why),
                    std::make_error_code(std::errc::bad_message)});
}

void ConnectionHandler::on_close(net::TcpConnection&, const net::CloseReason&) {
  finished_ = true;
  if (request_deadline_) request_deadline_->cancel();
}

}  // namespace volley::http
