// `volley session-load`: holds many heartbeating sessions open against a
// session server (`volley pingpong-server`) and measures whether the peer is
// heard on time: on every session, the silence between two arrivals
// (heartbeats or echoed messages), as a histogram, and how many silences
// outlasted the heartbeat interval by more than a quarter. Optionally a
// trickle of messages, each echo checked byte for byte.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <fmt/core.h>

#include <volley/gnb/protocol.hpp>
#include <volley/metrics/counter.hpp>
#include <volley/metrics/histogram.hpp>
#include <volley/net/loop_pool.hpp>
#include <volley/net/session.hpp>
#include <volley/net/tcp_connect.hpp>

#include "commands.hpp"
#include "output.hpp"
#include "duration_flag.hpp"
#include "file_limit.hpp"
#include "json_output.hpp"
#include "endpoint.hpp"
#include "listening.hpp"
#include "session_options.hpp"
#include "tls_flags.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;

struct LoadOptions {
  ShmFlags shm{};  // --shm, --shm-spin
  std::string host = "127.0.0.1";
  std::uint16_t port = 7777;
  std::size_t connections = 1000;
  std::size_t threads = 1;
  double seconds = 10;
  double rate = 0;  // messages per second over all sessions
  std::size_t size = 64;
  bool json = false;
  bool progress = true;
  SessionFlags session;
  TlsClientFlags tls;
};

constexpr std::size_t kCloseKinds = static_cast<std::size_t>(net::CloseReason::Kind::handshake_failed) + 1;

// One per loop, written only there; the reporter reads the live counters.
struct LoopStats {
  metrics::SingleWriterCounter live_open, live_closed, live_heard, live_late;
  std::uint64_t echoes = 0, bad_echoes = 0, sent = 0, refused = 0;
  std::uint64_t ended_early = 0;  // opened, then closed by anything but the end of the run
  std::uint64_t closes[kCloseKinds] = {};
  net::SessionStats sessions;
  metrics::Histogram silence_us;  // between two arrivals on one session
};

// The message every session sends: a checked-frame payload, or a whole gNB data frame.
std::vector<std::byte> make_message(const SessionFlags& flags, std::size_t size) {
  std::vector<std::byte> m(size);
  for (std::size_t i = 0; i < size; ++i) m[i] = std::byte{static_cast<unsigned char>(i * 7 + 1)};
  if (flags.framing != "gnb") return m;
  std::vector<std::byte> frame(gnb::kHeaderSize + size);
  gnb::encode_frame(gnb::MessageType::data, m, frame);
  return frame;
}

class LoadEvents final : public net::SessionEvents {
 public:
  LoadEvents(LoopStats& stats, const std::vector<std::byte>& message, std::chrono::microseconds late_after)
      : stats_(stats), message_(message), late_after_(late_after) {}

  void on_open(net::Session& s) override {
    session_ = &s;
    last_heard_ = Clock::now();
    stats_.live_open.add();
  }
  void on_heartbeat(net::Session&) override { heard(); }
  void on_message(net::Session&, const net::Message& echo) override {
    heard();
    const bool same = std::equal(echo.bytes.begin(), echo.bytes.end(), message_.begin(), message_.end());
    ++(same ? stats_.echoes : stats_.bad_echoes);
  }
  void on_close(net::Session& s, const net::CloseReason& reason) override {
    ++stats_.closes[static_cast<std::size_t>(reason.kind)];
    stats_.sessions += s.stats();
    if (session_ == nullptr) return;  // its TLS handshake failed: it never opened
    session_ = nullptr;
    stats_.live_closed.add();
    if (reason.kind != net::CloseReason::Kind::local_close) ++stats_.ended_early;
  }

  // Null once closed (and before the handshake finished).
  net::Session* session() const noexcept { return session_; }

 private:
  void heard() {
    const auto now = Clock::now();
    const auto silence = std::chrono::duration_cast<std::chrono::microseconds>(now - last_heard_);
    stats_.silence_us.record(static_cast<std::uint64_t>(silence.count()));
    stats_.live_heard.add();
    if (silence > late_after_) stats_.live_late.add();
    last_heard_ = now;
  }

  LoopStats& stats_;
  const std::vector<std::byte>& message_;
  std::chrono::microseconds late_after_;
  net::Session* session_ = nullptr;
  Clock::time_point last_heard_;
};

// The sessions of one loop, and its message trickle: every 10 ms the messages
// due go out round-robin over the open sessions.
class LoopSessions {
 public:
  LoopSessions(asio::io_context& loop, const std::vector<std::byte>& message, double rate)
      : ticker_(loop), message_(message), rate_(rate) {}

  void add(LoadEvents& events) { events_.push_back(&events); }
  void start() {
    started_ = Clock::now();
    if (rate_ > 0) tick();
  }
  // Stops sending and closes every open session gracefully.
  void finish() {
    finished_ = true;
    ticker_.cancel();
    for (LoadEvents* e : events_)
      if (net::Session* s = e->session()) s->close();
  }
  LoopStats stats;

 private:
  void tick() {
    const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
    const auto due = static_cast<std::uint64_t>(elapsed * rate_);
    for (std::size_t tries = 0; stats.sent + stats.refused < due && tries < events_.size(); ++tries) {
      net::Session* s = events_[next_++ % events_.size()]->session();
      if (s == nullptr) continue;
      if (s->send(message_) == net::SendResult::sent) ++stats.sent;
      else ++stats.refused;
    }
    ticker_.expires_after(std::chrono::milliseconds(10));
    ticker_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec && !finished_) tick();
    });
  }

  asio::steady_timer ticker_;
  const std::vector<std::byte>& message_;
  double rate_;
  std::vector<LoadEvents*> events_;
  std::size_t next_ = 0;
  Clock::time_point started_;
  bool finished_ = false;
};

std::uint64_t resident_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  std::uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "VmRSS: %lu kB", &kib) == 1) break;
  std::fclose(f);
  return kib;
}

int run_load(const LoadOptions& o) {
  raise_file_limit();
  if (o.session.heartbeat_ms <= 0) {
    tools::print(stderr, "volley session-load: --heartbeat must be above 0: heartbeats are what it measures\n");
    return 2;
  }
  const net::SessionOptions session_options = o.session.options();
  const auto late_after = std::chrono::microseconds(o.session.heartbeat_ms * 1250);  // the interval and a quarter
  const std::vector<std::byte> message = make_message(o.session, o.size);
  const TransportFactory transport = shm_client_transport(o.shm, o.host, tls_client_transport(o.tls, o.host));
  net::LoopPool loops(o.threads);
  std::vector<std::unique_ptr<LoopSessions>> per_loop;
  for (std::size_t i = 0; i < loops.size(); ++i)
    per_loop.push_back(std::make_unique<LoopSessions>(loops.loop(i), message, o.rate / static_cast<double>(loops.size())));

  net::ConnectionLimits limits;
  limits.handshake_timeout = std::chrono::seconds(10);
  std::vector<std::shared_ptr<net::TcpConnection>> connections;
  std::size_t connect_failures = 0;
  std::string first_failure;
  const auto connect_start = Clock::now();
  for (std::size_t i = 0; i < o.connections; ++i) {
    const std::size_t l = i % loops.size();
    std::error_code ec;
    auto socket = net::connect_tcp(loops.loop(l), o.host, o.port, std::chrono::seconds(5), ec);
    if (ec) {
      if (connect_failures++ == 0) first_failure = ec.message();
      continue;
    }
    auto events = std::make_unique<LoadEvents>(per_loop[l]->stats, message, late_after);
    per_loop[l]->add(*events);
    auto session = std::make_unique<net::Session>(o.session.make_codec(), session_options, std::move(events));
    connections.push_back(std::make_shared<net::TcpConnection>(std::move(socket), std::move(session), limits,
                                                               transport ? transport() : nullptr));
  }
  const double connect_seconds = seconds_since(connect_start);
  if (connections.empty()) {
    tools::print(stderr, "volley session-load: cannot connect to {}: {}\n", endpoint_text(o.host, o.port), first_failure);
    return 1;
  }
  for (std::size_t i = 0; i < connections.size(); ++i)
    asio::post(loops.loop(i % loops.size()), [c = connections[i]] { c->start(); });
  for (std::size_t l = 0; l < loops.size(); ++l) asio::post(loops.loop(l), [&, l] { per_loop[l]->start(); });
  connections.clear();  // each connection keeps itself alive while it has work

  asio::io_context main_loop(1);
  asio::steady_timer progress(main_loop), end(main_loop);
  asio::signal_set signals(main_loop, SIGINT, SIGTERM, SIGHUP);  // SIGHUP: as SIGTERM
  const auto start = Clock::now();
  auto finish = [&] {
    progress.cancel();
    end.cancel();
    signals.cancel();
    for (std::size_t l = 0; l < loops.size(); ++l) asio::post(loops.loop(l), [&, l] { per_loop[l]->finish(); });
  };
  end.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds)));
  end.async_wait([&](const boost::system::error_code& ec) {
    if (!ec) finish();
  });
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) finish();
  });
  std::uint64_t last_heard = 0;
  std::function<void()> tick = [&] {
    progress.expires_after(std::chrono::seconds(1));
    progress.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      std::uint64_t open = 0, heard = 0, late = 0;
      for (const auto& p : per_loop) {
        open += p->stats.live_open.load() - p->stats.live_closed.load();
        heard += p->stats.live_heard.load();
        late += p->stats.live_late.load();
      }
      tools::print(stderr, "[session-load {:6.1f}s] {} sessions open | {:>8} arrivals/s | {} silences over {} ms | {} MiB resident\n",
                 seconds_since(start), open, heard - last_heard, late, o.session.heartbeat_ms * 5 / 4,
                 resident_kib() / 1024);
      last_heard = heard;
      tick();
    });
  };
  if (o.progress) tick();
  loops.start();
  loops.release();  // each loop returns once its sessions are closed
  main_loop.run();
  loops.join();

  LoopStats sum;
  std::uint64_t opened = 0, late = 0;
  for (const auto& p : per_loop) {
    const LoopStats& s = p->stats;
    opened += s.live_open.load();
    late += s.live_late.load();
    sum.echoes += s.echoes;
    sum.bad_echoes += s.bad_echoes;
    sum.sent += s.sent;
    sum.refused += s.refused;
    sum.ended_early += s.ended_early;
    for (std::size_t k = 0; k < kCloseKinds; ++k) sum.closes[k] += s.closes[k];
    sum.sessions += s.sessions;
    sum.silence_us.merge(s.silence_us);
  }
  const std::uint64_t ended_early = sum.ended_early;
  const std::uint64_t never_opened = sum.closes[static_cast<std::size_t>(net::CloseReason::Kind::handshake_failed)];
  const auto& h = sum.silence_us;
  const auto ms = [](std::uint64_t us) { return static_cast<double>(us) / 1000.0; };
  boost::json::object closes;
  for (std::size_t k = 0; k < kCloseKinds; ++k)
    if (sum.closes[k] > 0) closes[net::to_string(static_cast<net::CloseReason::Kind>(k))] = sum.closes[k];
  boost::json::object report{
      {"tool", "volley session-load"},
      {"host", o.host},
      {"port", o.port},
      {"connections", o.connections},
      {"connect_failures", connect_failures},
      {"connect_seconds", connect_seconds},
      {"sessions_opened", opened},
      {"sessions_ended_early", ended_early},
      {"handshake_failures", never_opened},
      {"closes", closes},
      {"heartbeat_ms", o.session.heartbeat_ms},
      {"heartbeats_in", sum.sessions.heartbeats_in},
      {"heartbeats_out", sum.sessions.heartbeats_out},
      {"messages_sent", sum.sent},
      {"messages_refused", sum.refused},
      {"echoes", sum.echoes},
      {"bad_echoes", sum.bad_echoes},
      {"silence_ms", boost::json::object{{"count", h.count()},
                                         {"p50", ms(h.percentile(50))},
                                         {"p99", ms(h.percentile(99))},
                                         {"p999", ms(h.percentile(99.9))},
                                         {"max", ms(h.max())}}},
      {"late_silences", late},
      {"resident_kib", resident_kib()},
      {"seconds", seconds_since(start)},
  };
  if (o.json) {
    tools::print("{}\n", to_json_text(report));
  } else {
    tools::print("volley session-load report: {}:{}, {} sessions opened of {} ({} connects failed{}{}), {:.1f} s\n",
               o.host, o.port, opened, o.connections, connect_failures, connect_failures ? ": " : "", first_failure,
               seconds_since(start));
    tools::print("  heartbeats every {} ms: received {}, sent {}\n", o.session.heartbeat_ms, sum.sessions.heartbeats_in,
               sum.sessions.heartbeats_out);
    tools::print("  silence between arrivals (ms): p50 {:.1f}  p99 {:.1f}  p99.9 {:.1f}  max {:.1f}  ({} arrivals); "
               "over {} ms: {}\n",
               ms(h.percentile(50)), ms(h.percentile(99)), ms(h.percentile(99.9)), ms(h.max()), h.count(),
               o.session.heartbeat_ms * 5 / 4, late);
    tools::print("  messages: sent {}, refused {}, echoes {} ({} not equal to what was sent)\n", sum.sent, sum.refused,
               sum.echoes, sum.bad_echoes);
    tools::print("  sessions ended before the end of the run: {}{}\n", ended_early,
               ended_early ? " (" + boost::json::serialize(closes) + ")" : std::string());
  }
  return connect_failures == 0 && never_opened == 0 && ended_early == 0 && sum.bad_echoes == 0 ? 0 : 3;
}

}  // namespace

Runner add_session_load_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "session-load", "Hold many heartbeating sessions open against a session server and measure whether it is heard on time");
  auto o = std::make_shared<LoadOptions>();
  o->session.heartbeat_ms = 1000;
  add_connect_flags(*cmd, o->host, o->port);
  add_unix_connect_flags(*cmd, o->host, o->shm);
  cmd->add_option("-c,--connections", o->connections, "Sessions to hold open")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  cmd->add_option("-t,--threads", o->threads, "Event loops")->capture_default_str()->check(CLI::Range(1, 256));
  add_duration_option(*cmd, "-z,--duration", o->seconds, "How long to hold them", 0.001, kMaxRunSeconds);
  add_old_duration_alias(*cmd, "--seconds", o->seconds, 1.0, 0.001, kMaxRunSeconds);
  cmd->add_option("-r,--rate", o->rate, "Messages per second over all sessions, each echo checked (0: heartbeats only)")
      ->type_name("PER-SECOND")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e7));
  cmd->add_option("-s,--size", o->size, "Message payload")->type_name("BYTES")->capture_default_str()->check(CLI::Range(1, 65536));
  add_session_flags(*cmd, o->session);
  add_tls_client_flags(*cmd, o->tls);
  cmd->add_flag("--json", o->json, "Print the final report as JSON on stdout");
  cmd->add_flag("!--no-progress", o->progress, "Do not print a progress line each second on stderr");
  return [o] { return run_load(*o); };
}

}  // namespace volley::tools
