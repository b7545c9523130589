// HTTP/1.1 on the runtime, through the metrics endpoint in process: keep-alive,
// pipelining with answers given later from other loops, HEAD, HTTP/1.0, and
// bad requests answered with their status without disturbing other connections.
#include <atomic>
#include <fstream>
#include <mutex>
#include <optional>
#include <memory>
#include <string>
#include <vector>
#include <thread>

#include <gtest/gtest.h>

#include <volley/http/metrics_endpoint.hpp>
#include <volley/net/gather.hpp>
#include <volley/net/server.hpp>

#include "http_client.hpp"
#include "server_thread.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;

// A server whose /metrics answer is gathered from both worker loops: the
// answer comes later, from whichever loop finished last.
class EndpointFixture {
 public:
  explicit EndpointFixture(http::Limits limits = {})
      : server_({.bind = "127.0.0.1", .port = 0, .threads = 2}),
        endpoint_(server_.control_loop(), server_.workers(), {boost::asio::ip::make_address("127.0.0.1"), 0},
                  [this](http::MetricsEndpoint::Answer answer) {
                    net::gather<int>(
                        server_.workers(), [](std::size_t w) { return static_cast<int>(w) + 1; },
                        [answer](std::vector<int> parts) {
                          answer("test_loops_answered " + std::to_string(parts.size()) + "\ntest_sum " +
                                 std::to_string(parts[0] + parts[1]) + "\n");
                        });
                  },
                  limits) {
    // No listen(): the server only lends its loops, signals and stop to the endpoint.
    server_.on_ready([this] { endpoint_.start(); });
    server_.on_stop([this] { endpoint_.shutdown(); });
    thread_.emplace(server_);
  }
  int port() const { return endpoint_.local_endpoint().port(); }
  const http::MetricsEndpoint& endpoint() const { return endpoint_; }

 private:
  net::Server server_;
  http::MetricsEndpoint endpoint_;
  std::optional<ServerThread> thread_;  // last: stops the server before the rest goes
};

constexpr const char* kMetricsBody = "test_loops_answered 2\ntest_sum 3\n";

// The program's part of a /metrics answer; the endpoint's own counts follow it.
std::string program_part(const std::string& body) { return body.substr(0, body.find("# HELP volley_metrics_")); }

TEST(Http, KeepAliveServesRequestsOneAfterAnotherOnOneConnection) {
  EndpointFixture f;
  HttpClient c(f.port());
  for (int i = 0; i < 3; ++i) {
    const auto metrics = c.get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 200);
    EXPECT_TRUE(metrics->has_header("Content-Type: text/plain; version=0.0.4; charset=utf-8")) << metrics->head;
    EXPECT_EQ(program_part(metrics->body), kMetricsBody);
    const auto health = c.get("/healthz?verbose=1");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    EXPECT_EQ(health->body, "ok\n");
  }
  EXPECT_EQ(f.endpoint().scrapes(), 3u);
  EXPECT_EQ(f.endpoint().stats().requests.load(), 6u);
}

TEST(Http, PipelinedRequestsAreAnsweredInOrderEvenWhenTheFirstAnswerComesLater) {
  EndpointFixture f;
  HttpClient c(f.port());
  c.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
         "GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\nHEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\n"
         "DELETE /metrics HTTP/1.1\r\nHost: t\r\n\r\nGET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
  const auto a = c.read(), b = c.read(), d = c.read(), head = c.read(true), del = c.read(), last = c.read();
  ASSERT_TRUE(a && b && d && head && del && last);
  EXPECT_EQ(program_part(a->body), kMetricsBody);
  EXPECT_EQ(b->body, "ok\n");
  EXPECT_EQ(d->status, 404);
  EXPECT_EQ(head->status, 200);
  // The GET's length: the endpoint's counts in both are single digits.
  EXPECT_TRUE(head->has_header("Content-Length: " + std::to_string(a->body.size()))) << head->head;
  EXPECT_EQ(del->status, 405);
  EXPECT_TRUE(del->has_header("Allow: GET, HEAD")) << del->head;
  EXPECT_EQ(program_part(last->body), kMetricsBody);  // HEAD's answer carried no body: the next one starts clean
}

// The most a TCP socket's send buffer grows to (the third of tcp_wmem).
std::size_t largest_send_buffer() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_wmem");
  std::size_t low = 0, initial = 0, high = 4u << 20;
  in >> low >> initial >> high;
  return high;
}

// A peer that pipelines more answers than the connection's high water and
// reads them only later: the endpoint stops at the bound, and once the peer
// reads and the output drains (on_backpressure), it answers the rest.
TEST(Http, PipelinedAnswersOverHighWaterWaitForThePeerAndAreAllAnsweredOnceItReads) {
  EndpointFixture f;
  HttpClient c(f.port(), 16 * 1024);
  // Each answer is over 1 KiB: twice what the kernel can hold for the peer
  // (its largest send buffer) and the connection's bound together.
  const std::size_t requests = 2 * (largest_send_buffer() + http::MetricsEndpoint::kOutputHighWater) / 1024;
  std::string pipeline;
  for (std::size_t i = 0; i < requests; ++i) pipeline += "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n";
  c.send(pipeline);
  std::this_thread::sleep_for(500ms);
  EXPECT_LT(f.endpoint().stats().requests.load(), requests)
      << "nothing was read, yet every answer was made: the output bound never held";
  for (std::size_t i = 0; i < requests; ++i) {
    const auto a = c.read();
    ASSERT_TRUE(a) << "answer " << i << " never came";
    ASSERT_EQ(a->status, 200) << i;
    ASSERT_GT(a->body.size(), 1024u) << "fewer bytes than planned for";
  }
  EXPECT_EQ(f.endpoint().stats().requests.load(), requests);
}

TEST(Http, ARequestSplitByteByByteIsAnswered) {
  EndpointFixture f;
  HttpClient c(f.port());
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: t\r\nUser-Agent: slow\r\n\r\n";
  for (const char ch : request) c.send(std::string(1, ch));
  const auto a = c.read();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->body, "ok\n");
}

TEST(Http, Http10AndConnectionCloseEndTheConnectionAfterTheAnswer) {
  EndpointFixture f;
  {
    HttpClient c(f.port());
    c.send("GET /healthz HTTP/1.0\r\n\r\n");
    const auto a = c.read();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->body, "ok\n");
    EXPECT_TRUE(a->has_header("Connection: close")) << a->head;
    EXPECT_TRUE(c.closed_by_server());
  }
  HttpClient c(f.port());
  c.send("GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(c.read());
  EXPECT_TRUE(c.closed_by_server()) << "the request after Connection: close is not answered";
}

TEST(Http, BadRequestsGetTheirStatusAndCloseWhileAnotherConnectionCarriesOn) {
  EndpointFixture f;
  HttpClient good(f.port());
  ASSERT_TRUE(good.get("/healthz"));
  struct Case {
    const char* what;
    std::string request;
    int status;
  };
  static constexpr char kGarbage[] = "\x16\x03\x01\x02\x00 not http at all\r\n\r\n";
  const Case cases[] = {
      {"garbage", std::string(kGarbage, sizeof kGarbage - 1), 400},
      {"a header block over 8 KiB", "GET / HTTP/1.1\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n", 431},
      {"a body over 64 KiB", "POST /metrics HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" + std::string(100000, 'b'), 413},
      {"an unknown transfer encoding", "POST /metrics HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
      {"a bad version", "GET /metrics HTTP/7.5x\r\n\r\n", 400},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    HttpClient bad(f.port());
    bad.send(c.request);
    const auto a = bad.read();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, c.status) << a->head;
    EXPECT_TRUE(a->has_header("Connection: close")) << a->head;
    EXPECT_TRUE(bad.closed_by_server());
  }
  EXPECT_EQ(f.endpoint().stats().bad_requests.load(), std::size(cases));
  const auto after = good.get("/metrics");
  ASSERT_TRUE(after);
  EXPECT_EQ(program_part(after->body), kMetricsBody);
}

// A full endpoint lets go of the connection that has been of no use longest
// for a new one, so peers that connect and say nothing cannot lock a scraper
// out. (Before, the 65th connection was closed at once, scraper or not: 64
// silent connections kept every scrape out until their idle timeout, 60 s.)
TEST(Http, AFullEndpointLetsGoOfTheConnectionIdleLongestForANewOne) {
  EndpointFixture f;
  std::vector<std::unique_ptr<HttpClient>> held;
  for (std::size_t i = 0; i < http::MetricsEndpoint::kMaxConnections; ++i) {
    held.push_back(std::make_unique<HttpClient>(f.port()));
    ASSERT_TRUE(held.back()->get("/healthz"));  // answered in this order: the first is idle longest
  }
  std::vector<std::unique_ptr<HttpClient>> scrapers;  // kept open: each new one finds the endpoint full
  for (int scrape = 0; scrape < 3; ++scrape) {
    auto& scraper = *scrapers.emplace_back(std::make_unique<HttpClient>(f.port()));
    const auto a = scraper.get("/metrics");
    ASSERT_TRUE(a) << "scrape " << scrape;
    EXPECT_EQ(program_part(a->body), kMetricsBody);
    EXPECT_EQ(metric_value(a->body, "volley_metrics_connections_evicted_total"), scrape + 1) << a->body;
    EXPECT_TRUE(held[static_cast<std::size_t>(scrape)]->closed_by_server()) << "the idlest made room";
  }
  // The ones not chosen are served as before.
  const auto last = held.back()->get("/metrics");
  ASSERT_TRUE(last);
  EXPECT_EQ(program_part(last->body), kMetricsBody);
  EXPECT_EQ(f.endpoint().evicted(), 3u);
}

// A request must arrive whole within its deadline, counted from its first
// byte: bytes that trickle in do not extend it. (Before, a request line sent
// and then one byte every few seconds held its connection for as long as the
// bytes kept coming.)
TEST(Http, ARequestThatTricklesInIsRefusedAtItsDeadline) {
  EndpointFixture f(http::Limits{.request_timeout = 300ms});
  HttpClient good(f.port());
  HttpClient slow(f.port());
  const auto start = std::chrono::steady_clock::now();  // before the first byte: the server's clock starts later
  slow.send("GET /metrics HTTP/1.1\r\n");
  // One header byte every 50 ms, for up to 3 s: ten times the deadline.
  std::optional<HttpAnswer> answer;
  for (int i = 0; i < 60 && !answer; ++i) {
    std::this_thread::sleep_for(50ms);
    slow.send("X");
    if (slow.readable()) answer = slow.read();
  }
  ASSERT_TRUE(answer) << "the trickle was never cut";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_EQ(answer->status, 408) << answer->head;
  EXPECT_TRUE(slow.closed_by_server());
  EXPECT_EQ(f.endpoint().stats().timed_out.load(), 1u);
  // A request that arrives whole in pieces within the deadline is answered, and
  // the other connection was never disturbed.
  good.send("GET /healthz HTTP/1.1\r\n");
  std::this_thread::sleep_for(100ms);
  good.send("Host: t\r\n\r\n");
  const auto ok = good.read();
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  const auto metrics = good.get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metric_value(metrics->body, "volley_metrics_request_timeouts_total"), 1) << metrics->body;
  EXPECT_EQ(metric_value(metrics->body, "volley_metrics_bad_requests_total"), 1) << metrics->body;
}


// A draining server (net::Server::drain) lets an idle keep-alive connection
// go at once, answers the request under way with Connection: close and closes
// after it, and stops once both have gone.
TEST(HttpDrain, TheRequestUnderWayIsAnsweredWithConnectionCloseAndIdleConnectionsGo) {
  std::mutex held_mutex;
  std::optional<http::Responder> held;
  const http::Handler handler = [&](const http::Request& request, http::Responder responder) {
    if (request.path() == "/slow") {
      const std::lock_guard lock(held_mutex);
      held.emplace(std::move(responder));
      return;
    }
    http::Response r;
    r.body = "fast\n";
    responder(std::move(r));
  };
  http::Stats stats;
  net::Server server({.bind = "127.0.0.1", .port = 0, .threads = 1, .handle_signals = false,
                      .drain_timeout = std::chrono::seconds(10)});
  server.listen([&](std::size_t) { return std::make_unique<http::ConnectionHandler>(handler, http::Limits{}, stats); });
  std::atomic<bool> returned{false};
  struct Running {  // joined also when an assertion fails
    net::Server& server;
    std::thread thread;
    ~Running() {
      server.stop();
      thread.join();
    }
  } running{server, std::thread([&] {
              server.run();
              returned = true;
            })};
  const int port = server.port();

  HttpClient idle(port), busy(port);
  const auto fast = idle.get("/fast");
  ASSERT_TRUE(fast);
  EXPECT_FALSE(fast->has_header("Connection: close")) << fast->head;
  busy.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
  const auto is_held = [&] {
    const std::lock_guard lock(held_mutex);
    return held.has_value();
  };
  for (int i = 0; i < 500 && !is_held(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(is_held());

  server.drain();
  EXPECT_FALSE(idle.read()) << "an idle connection is closed, unanswered";
  EXPECT_TRUE(idle.closed_by_server());
  EXPECT_TRUE(server.draining());
  {
    const std::lock_guard lock(held_mutex);
    http::Response r;
    r.body = "slow\n";
    (*held)(std::move(r));
  }
  const auto slow = busy.read();
  ASSERT_TRUE(slow);
  EXPECT_EQ(slow->body, "slow\n");
  EXPECT_TRUE(slow->has_header("Connection: close")) << slow->head;
  EXPECT_TRUE(busy.closed_by_server());
  for (int i = 0; i < 500 && !returned; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(returned) << "run() returns once both have gone, well before the drain's 10 s";
}

}  // namespace
}  // namespace volley::test
