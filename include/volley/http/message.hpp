#pragma once
// An HTTP/1.1 request as a handler sees it, and the response it gives.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace volley::http {

struct Request {
  std::string method;  // as sent: "GET", "HEAD", ...
  std::string target;  // "/metrics?name=x"
  unsigned version = 11;  // 10 or 11
  bool keep_alive = true;  // what the request asked for (HTTP/1.1 default, "Connection: close", HTTP/1.0)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The target without its query.
  std::string_view path() const noexcept {
    const std::string_view t = target;
    return t.substr(0, t.find('?'));
  }
};

struct Response {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // more, e.g. {"Allow", "GET, HEAD"}
  bool close = false;  // end the connection after this response
};

// "OK", "Not Found", ... for the statuses this library sends; "Unknown" otherwise.
std::string_view reason_phrase(unsigned status) noexcept;

// The bytes of `response` on the wire: status line, headers (Content-Length
// always), blank line, body (none for a HEAD request's answer).
std::string serialize(const Response& response, bool keep_alive, bool head_request);

}  // namespace volley::http
