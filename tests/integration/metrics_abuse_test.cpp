// A server program's metrics endpoint under attack, with a scraper beside the
// attack that must be served: pipelined requests from peers that never read,
// and connections held open silent or with requests that trickle in.
#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "adversarial.hpp"
#include "child_process.hpp"
#include "listening_server.hpp"
#include "metrics_scrape.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kAttackers = 64;  // the endpoint's connection limit

// `volley target` with its metrics endpoint, and a scraper of it.
class Target {
 public:
  Target() : server_(dir_, {"target", "--bind", "127.0.0.1", "--port", "0", "--json", "--no-progress", "--metrics", "127.0.0.1:0"}, "target") {
    metrics_port_ = metrics_port(server_.process());
  }
  int metrics() const { return metrics_port_; }
  ListeningServer& server() { return server_; }

  // One scrape on a new connection: its answer, and how long it took (connect included).
  struct Scrape {
    std::optional<HttpAnswer> answer;
    Clock::duration took;
  };
  Scrape scrape() const {
    const auto start = Clock::now();
    HttpClient scraper(metrics_port_);
    auto answer = scraper.get("/metrics");
    return {std::move(answer), Clock::now() - start};
  }

 private:
  TempDir dir_;
  ListeningServer server_;
  int metrics_port_ = 0;
};

// The scraper is served, within a second, three times in a row.
void expect_scrapes_served(const Target& target) {
  for (int i = 0; i < 3; ++i) {
    const auto s = target.scrape();
    ASSERT_TRUE(s.answer) << "scrape " << i << " got no answer";
    EXPECT_EQ(s.answer->status, 200);
    EXPECT_GE(metric_total(s.answer->body, "volley_gnb_frames_received_total"), 0) << "not the program's metrics";
    EXPECT_LT(s.took, 1s) << "scrape " << i << " took "
                          << std::chrono::duration_cast<std::chrono::milliseconds>(s.took).count() << " ms";
  }
}

// A scraper that keeps its connection between scrapes, as Prometheus does (a
// new connection per scrape would each time make the endpoint let go of one
// of the attack's).
class KeptScraper {
 public:
  explicit KeptScraper(int port) : port_(port) {}
  // The family's total (-1: no answer). A connection the server closed is opened anew.
  double total(const std::string& name) {
    try {
      if (!client_) client_ = std::make_unique<HttpClient>(port_);
      if (const auto a = client_->get("/metrics"); a && a->status == 200) return metric_total(a->body, name);
    } catch (const std::runtime_error&) {  // refused, or closed under the send
    }
    client_.reset();
    return -1;
  }

 private:
  int port_;
  std::unique_ptr<HttpClient> client_;
};

// A process's resident memory, sampled until it stops growing (no MiB more in
// a second), 20 s at most: the highest seen.
std::uint64_t settled_resident_kib(pid_t pid) {
  std::uint64_t peak = resident_kib(pid), at_last_growth = peak;
  for (int quiet = 0, i = 0; quiet < 4 && i < 80; ++i) {
    std::this_thread::sleep_for(250ms);
    peak = std::max(peak, resident_kib(pid));
    if (peak > at_last_growth + 1024) {
      at_last_growth = peak;
      quiet = 0;
    } else {
      ++quiet;
    }
  }
  return peak;
}

// 64 peers each pipeline about 1,900 GET /metrics and read nothing. Before,
// every buffered request was answered into memory (a send from outside a read
// never put the connection at its output bound): `volley target` grew from
// 8.6 MB to 246 MB resident, and the 65th connection, the scraper's, was
// closed at once. Now each connection holds at most its high water of answers
// (256 KiB) and then reads and answers nothing more.
TEST(MetricsEndpointUnderAttack, PeersThatPipelineAndNeverReadHoldOneHighWaterOfAnswersEach) {
  Target target;
  ASSERT_GT(target.metrics(), 0);
  const std::uint64_t before_kib = resident_kib(target.server().process().pid());
  std::string requests;
  for (int i = 0; i < 1900; ++i) requests += "GET /metrics HTTP/1.1\r\nHost: attack\r\n\r\n";
  std::vector<Abuser> attackers;
  for (int i = 0; i < kAttackers; ++i) {
    attackers.emplace_back(target.metrics());
    ASSERT_TRUE(attackers.back().connected());
    attackers.back().send(std::as_bytes(std::span(requests)));
  }
  const std::uint64_t after_kib = settled_resident_kib(target.server().process().pid());
  KeptScraper scraper(target.metrics());  // takes the place of one attacker
  const double answered = scraper.total("volley_metrics_requests_total");
  // 64 x (256 KiB of answers, one answer over it, 64 KiB of buffered requests): about 21 MiB.
  ::testing::Test::RecordProperty("resident_growth_kib", static_cast<int>(after_kib - before_kib));
  const std::uint64_t bound_kib = (kSanitizerBuild ? 768u : 48u) * 1024;
  EXPECT_LT(after_kib - before_kib, bound_kib) << "from " << before_kib << " KiB to " << after_kib << " KiB";
  EXPECT_GT(answered, 0);
  EXPECT_LT(answered, kAttackers * 1900.0) << "every pipelined request was answered";
  expect_scrapes_served(target);
  EXPECT_TRUE(target.server().running());
  target.server().stop();
}

// Connections that hold a request open: a request line and then a header byte
// now and then, or nothing at all. Before, 64 of either kept every scrape and
// /healthz out (for as long as bytes trickled, or 60 s of silence): the 65th
// connection was closed at once. Now a scraper's connection takes the place of
// the one idle longest, and a request not whole within 5 s of its first byte
// is refused with 408, however its bytes trickle.
void hold_the_endpoint(bool trickle) {
  static const std::string kRequestLine = "GET /metrics HTTP/1.1\r\n";
  Target target;
  ASSERT_GT(target.metrics(), 0);
  std::vector<Abuser> attackers;
  for (int i = 0; i < kAttackers; ++i) {
    attackers.emplace_back(target.metrics());
    ASSERT_TRUE(attackers.back().connected());
    if (trickle) attackers.back().send(std::as_bytes(std::span(kRequestLine)));
  }
  // Stopped and joined as the test ends, however it ends.
  std::jthread trickler([&](const std::stop_token& stop) {
    if (!trickle) return;
    const std::string byte = "X";
    for (int tick = 0; tick < 100 && !stop.stop_requested(); ++tick) {  // one byte every 100 ms each, 10 s at most
      for (auto& a : attackers) a.send(std::as_bytes(std::span(byte)));
      std::this_thread::sleep_for(100ms);
    }
  });
  expect_scrapes_served(target);
  if (trickle) {
    // The trickled requests meet their deadline, bytes or not.
    KeptScraper scraper(target.metrics());
    double timed_out = 0;
    for (int i = 0; i < 75 && timed_out < 1; ++i) {  // 15 s at most
      timed_out = scraper.total("volley_metrics_request_timeouts_total");
      if (timed_out < 1) std::this_thread::sleep_for(200ms);
    }
    EXPECT_GE(timed_out, 1) << "no trickled request was cut at its deadline";
    EXPECT_GE(scraper.total("volley_metrics_bad_requests_total"), 1);
  }
  trickler.request_stop();
  trickler.join();
  const auto s = target.scrape();
  ASSERT_TRUE(s.answer);
  // At least the first scraper's connection took an attacker's place (those
  // after it may have found room left by the scrapers before, once closed).
  EXPECT_GE(metric_total(s.answer->body, "volley_metrics_connections_evicted_total"), 1) << s.answer->body;
  EXPECT_TRUE(target.server().running());
  target.server().stop();
}

TEST(MetricsEndpointUnderAttack, ConnectionsHeldSilentDoNotLockAScraperOut) { hold_the_endpoint(false); }

TEST(MetricsEndpointUnderAttack, RequestsThatTrickleInDoNotLockAScraperOutAndMeetTheirDeadline) {
  hold_the_endpoint(true);
}

}  // namespace
}  // namespace volley::test
