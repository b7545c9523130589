#include <volley/http/connection_handler.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
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
    : handler_(handler), limits_(limits), stats_(stats), parser_(std::make_unique<Parser>()) {}

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
    if (ec == bhttp::error::need_more) return;  // the rest of a header or body is still to come
    if (ec == bhttp::error::header_limit) return refuse(connection, 431, "request header over the limit");
    if (ec == bhttp::error::body_limit) return refuse(connection, 413, "request body over the limit");
    if (ec == bhttp::error::bad_transfer_encoding) return refuse(connection, 501, "transfer encoding not supported");
    if (ec) return refuse(connection, 400, ec.message());
    if (!p->is_done()) {
      if (used == 0) return;
      continue;
    }
    auto message = p->release();
    p.reset();
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
    waiting_ = true;
    keep_alive_ = request.keep_alive;
    connection.pause_reading();  // the next request waits in the socket until this one is answered
    handler_(request, Responder(connection.shared_from_this(), this, request.method == "HEAD"));
  }
}

void ConnectionHandler::respond(net::TcpConnection& connection, const Response& response, bool head) {
  if (finished_ || !waiting_ || !connection.open()) return;
  waiting_ = false;
  const bool keep_alive = keep_alive_ && !response.close;
  const std::string bytes = serialize(response, keep_alive, head);
  connection.send(std::as_bytes(std::span(bytes)));
  if (!keep_alive) {
    finished_ = true;
    connection.close({net::CloseReason::Kind::local_close, "response with Connection: close"});
    // Read on (input dropped) so the close sees the peer's end, not a reset for unread bytes.
    return connection.resume_reading();
  }
  parse_buffered(connection);  // pipelined requests read already
  if (!waiting_ && !finished_) connection.resume_reading();
}

void ConnectionHandler::refuse(net::TcpConnection& connection, unsigned status, std::string_view why) {
  stats_.bad_requests.fetch_add(1, std::memory_order_relaxed);
  finished_ = true;
  Response r;
  r.status = status;
  r.body = std::string(why) + "\n";
  const std::string bytes = serialize(r, false, false);
  connection.send(std::as_bytes(std::span(bytes)));
  connection.close({net::CloseReason::Kind::protocol_error, fmt::format("HTTP {}: {}", status, why)});
}

void ConnectionHandler::on_close(net::TcpConnection&, const net::CloseReason&) {
  finished_ = true;
}

}  // namespace volley::http
