#pragma once
// A raw HTTP/1.1 client for the tests: sends bytes as given (so requests can
// be malformed, pipelined or split) and reads responses one at a time.
#include <cstdlib>
#include <optional>
#include <string>

#include "raw_client.hpp"

namespace volley::test {

struct HttpAnswer {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
  bool has_header(const std::string& line) const { return head.find("\r\n" + line + "\r\n") != std::string::npos; }
};

class HttpClient {
 public:
  explicit HttpClient(int port, int receive_buffer = 0) : socket_(port, receive_buffer) {}

  void send(const std::string& bytes) { socket_.send(std::as_bytes(std::span(bytes))); }

  // The next response (nullopt when the connection ended or 5 s passed first).
  // `head_request`: the answer to a HEAD, which has no body whatever its length says.
  std::optional<HttpAnswer> read(bool head_request = false) {
    std::size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos)
      if (!fill()) return std::nullopt;
    HttpAnswer a;
    a.head = pending_.substr(0, end + 2);
    pending_.erase(0, end + 4);
    if (a.head.rfind("HTTP/1.1 ", 0) != 0) return std::nullopt;
    a.status = std::atoi(a.head.c_str() + 9);
    std::size_t length = 0;
    if (const auto at = a.head.find("\r\nContent-Length: "); at != std::string::npos)
      length = std::strtoul(a.head.c_str() + at + 18, nullptr, 10);
    if (head_request) length = 0;
    while (pending_.size() < length)
      if (!fill()) return std::nullopt;
    a.body = pending_.substr(0, length);
    pending_.erase(0, length);
    return a;
  }

  std::optional<HttpAnswer> get(const std::string& path) {
    send("GET " + path + " HTTP/1.1\r\nHost: test\r\n\r\n");
    return read();
  }

  // True when part of an answer (or the end) is there to read.
  bool readable() const { return !pending_.empty() || socket_.readable(); }

  void close() { socket_.close(); }

  // True when the server closed the connection with nothing more to say.
  bool closed_by_server() { return pending_.empty() && socket_.peer_closed(); }

 private:
  bool fill() {
    const auto bytes = socket_.read_some(64 * 1024);
    if (bytes.empty()) return false;
    pending_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return true;
  }

  RawClient socket_;
  std::string pending_;
};

// The value of an unlabelled sample in a Prometheus exposition ("name 123"), -1 if absent.
inline double metric_value(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const auto at = ("\n" + text).find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + key.size() - 1, nullptr);
}

}  // namespace volley::test
