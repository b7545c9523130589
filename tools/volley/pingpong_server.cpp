// `volley pingpong-server`: answers every message with the same payload, over
// sessions with heartbeats, backpressure and the protocol-error policy.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <volley/metrics/counter.hpp>
#include <volley/net/gather.hpp>
#include <volley/net/server.hpp>
#include <volley/net/session.hpp>

#include "commands.hpp"
#include "output.hpp"
#include "file_limit.hpp"
#include "json_output.hpp"
#include "listening.hpp"
#include "metrics_service.hpp"
#include "progress_timer.hpp"
#include "session_options.hpp"
#include "tls_flags.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;

struct ServerOptions {
  ListenFlags listen{.bind = kDefaultBind, .port = 7777, .port_file = {}};
  std::size_t threads = 1;
  bool busy_poll = false;
  bool json = false;
  bool progress = true;
  SessionFlags session;
  TlsServerFlags tls;
  WebSocketFlags ws;
  MetricsFlags metrics;
  net::Design design = net::Design::loop_per_thread;
};

// One per worker slot. In the loop-per-thread design only that worker's loop
// touches it; in the thread-pool design the slot's connections run on strands
// of their own, on any thread, so the live counters add atomically and the
// set of open sessions and the ended sessions' totals are under a lock.
struct WorkerTotals {
  // Live, for the progress line (written by the slot's sessions, read by the reporter).
  metrics::SlotCounter live_messages;
  metrics::SlotCounter live_opened;
  metrics::SlotCounter live_closed;
  bool shared = false;  // the thread-pool design
  void add(metrics::SlotCounter& counter) noexcept { counter.add(1, shared); }

  mutable std::mutex mutex;  // guards the two below
  SessionTotals closed;      // sessions that ended (their stats added at close)
  std::unordered_set<net::Session*> open;

  // Loop per thread, on this worker's loop: the ended sessions and the open ones as they are now.
  SessionTotals snapshot() const {
    const std::lock_guard lock(mutex);
    SessionTotals t = closed;
    t.open = open.size();
    for (const net::Session* s : open) t.stats += s->stats();
    return t;
  }
};

// A scrape in the thread-pool design: the ended sessions' totals from each
// slot, and each open session's stats read on its own strand (where they are
// written), summed as they come in; answered once the last one is in. A
// session that ends meanwhile is read after its end: its final stats, which
// the ended totals taken before did not hold, so nothing counts twice.
void scrape_thread_pool(const std::vector<WorkerTotals>& totals, std::function<void(SessionTotals)> done) {
  struct Scrape {
    std::mutex mutex;
    SessionTotals sum;
    std::size_t waiting = 1;
    std::function<void(SessionTotals)> done;
    void finish_one() {
      std::unique_lock lock(mutex);
      if (--waiting > 0) return;
      lock.unlock();
      done(sum);
    }
  };
  auto scrape = std::make_shared<Scrape>();
  scrape->done = std::move(done);
  std::vector<std::shared_ptr<net::TcpConnection>> open;
  for (const WorkerTotals& t : totals) {
    const std::lock_guard lock(t.mutex);
    scrape->sum += t.closed;
    scrape->sum.open += t.open.size();
    for (net::Session* s : t.open) open.push_back(s->connection()->shared_from_this());
  }
  scrape->waiting += open.size();
  for (auto& c : open)
    asio::post(c->get_executor(), [scrape, c] {
      const net::SessionStats stats = static_cast<const net::Session&>(c->handler()).stats();
      {
        const std::lock_guard lock(scrape->mutex);
        scrape->sum.stats += stats;
      }
      scrape->finish_one();
    });
  scrape->finish_one();
}

std::string peer_name(net::Session& s) {
  return s.connection()->peer();
}

class EchoEvents final : public net::SessionEvents {
 public:
  static constexpr std::size_t kEchoInPlaceFrom = 64 * 1024;

  explicit EchoEvents(WorkerTotals& totals) : totals_(totals) {}

  void on_open(net::Session& s) override {
    {
      const std::lock_guard lock(totals_.mutex);
      ++totals_.closed.opened;
      totals_.open.insert(&s);
    }
    totals_.add(totals_.live_opened);
  }

  void on_message(net::Session& s, const net::Message& message) override {
    totals_.add(totals_.live_messages);
    const std::span<const std::byte> payload = message.bytes;
    // A large payload leaves from where it was read: one pass less over it
    // (the copy into the write queue, mostly cache misses at 1 MB), for a
    // pause in reading until it has left.
    if (payload.size() >= kEchoInPlaceFrom) s.send_received(payload);
    else s.send(payload);
    // The reply was taken; while the queue is over high water, read no more
    // requests rather than refuse their replies.
    if (s.congested()) s.pause_input();
  }

  void on_backpressure(net::Session& s, bool congested) override {
    if (!congested) s.resume_input();
  }

  void on_protocol_error(net::Session& s, const std::error_code& error, std::span<const std::byte>,
                         bool closing) override {
    spdlog::warn("{}: protocol error: {} ({})", peer_name(s), error.message(), closing ? "closing" : "frame dropped");
  }

  void on_close(net::Session& s, const net::CloseReason& reason) override {
    const auto& st = s.stats();
    {
      const std::lock_guard lock(totals_.mutex);
      totals_.closed.stats += st;
      ++totals_.closed.closes[static_cast<std::size_t>(reason.kind)];
      totals_.open.erase(&s);
      totals_.closed.unsent_bytes += reason.unsent_bytes;
    }
    if (reason.kind != net::CloseReason::Kind::handshake_failed) totals_.add(totals_.live_closed);  // it never opened
    spdlog::info("{}: closed: {}{}{} ({} messages in, {} protocol errors{})", peer_name(s), net::to_string(reason.kind),
                 reason.detail.empty() ? "" : ": ", reason.detail, st.messages_in, st.protocol_errors,
                 reason.unsent_bytes ? fmt::format(", {} bytes unsent", reason.unsent_bytes) : "");
  }

 private:
  WorkerTotals& totals_;
};

int run_server(const ServerOptions& o) {
  raise_file_limit();  // a session load test holds thousands
  net::ServerOptions server_opts = server_options(o.listen, o.threads, o.busy_poll);
  server_opts.design = o.design;
  apply_tls(server_opts, o.tls);
  apply_websocket(server_opts, o.ws, o.session.frame_size());
  apply_shm(server_opts, o.listen.shm);
  net::Server server(server_opts);
  std::vector<WorkerTotals> totals(server.threads());
  for (auto& t : totals) t.shared = o.design == net::Design::thread_pool;
  const net::SessionOptions session_options = o.session.options();
  const SessionFlags flags = o.session;
  server.listen([&](std::size_t worker) -> std::unique_ptr<net::StreamHandler> {
    return std::make_unique<net::Session>(flags.make_codec(), session_options,
                                          std::make_unique<EchoEvents>(totals[worker]));
  });

  MetricsService metrics(server, o.metrics, [&](http::MetricsEndpoint::Answer answer) {
    const auto write = [&server, answer, ws = o.ws](const SessionTotals& sum) {
      metrics::PrometheusText out;
      write_session_metrics(out, sum);
      write_server_metrics(out, server, ws);
      answer(out.text());
    };
    if (o.design == net::Design::thread_pool) return scrape_thread_pool(totals, write);
    net::gather<SessionTotals>(server.workers(), [&](std::size_t w) { return totals[w].snapshot(); },
                               [write](std::vector<SessionTotals> parts) {
                                 SessionTotals sum;
                                 for (const auto& p : parts) sum += p;
                                 write(sum);
                               });
  });

  const auto start = Clock::now();
  std::uint64_t last_messages = 0;
  ProgressTimer progress(server.control_loop(), [&] {
    std::uint64_t messages = 0, open = 0;
    for (const auto& t : totals) {
      messages += t.live_messages.load();
      open += t.live_opened.load() - t.live_closed.load();
    }
    if (messages != last_messages)
      tools::print(stderr, "[pingpong-server {:6.1f}s] {:>10} msgs/s | {} sessions open\n", seconds_since(start),
                 messages - last_messages, open);
    last_messages = messages;
  });
  server.on_ready([&] {
    const std::string proto = served_proto(o.listen, listening_proto(o.tls.tls, o.ws));
    announce_server(proto, server, o.listen.port_file);
    spdlog::info(
        "volley pingpong-server on {} ({}, {} framing, {} worker threads ({}){}, receive path {}, "
        "heartbeat {} ms x {})",
        server.listening_text(), proto, flags.framing, server.threads(),
        net::to_string(o.design), o.busy_poll ? ", busy-poll" : "", net::to_string(server.workers().receive_path()),
        flags.heartbeat_ms, flags.heartbeat_misses);
    metrics.start();
    if (o.progress) progress.start();
  });
  server.on_stop([&] {
    progress.stop();
    metrics.stop();
  });
  server.run();

  SessionTotals sum;
  for (const auto& t : totals) sum += t.closed;  // every session has ended
  boost::json::object closes;
  for (std::size_t k = 0; k < net::CloseReason::kKinds; ++k)
    closes[net::to_string(static_cast<net::CloseReason::Kind>(k))] = sum.closes[k];
  boost::json::object report{{"tool", "volley pingpong-server"},
                             {"sessions", sum.opened},
                             {"messages_in", sum.stats.messages_in},
                             {"messages_out", sum.stats.messages_out},
                             {"heartbeats_in", sum.stats.heartbeats_in},
                             {"heartbeats_out", sum.stats.heartbeats_out},
                             {"goodbyes_out", sum.stats.goodbyes_out},
                             {"protocol_errors", sum.stats.protocol_errors},
                             {"high_water_events", sum.stats.high_water_events},
                             {"unsent_bytes", sum.unsent_bytes},
                             {"closes", closes}};
  add_server_counters(report, server, o.ws.stats->floods.load());
  if (o.json) {
    tools::print("{}\n", to_json_text(report));
  } else {
    tools::print("sessions {}, messages in {} out {}, heartbeats in {} out {}, protocol errors {}, high-water events {}\n",
               sum.opened, sum.stats.messages_in, sum.stats.messages_out, sum.stats.heartbeats_in,
               sum.stats.heartbeats_out, sum.stats.protocol_errors, sum.stats.high_water_events);
    tools::print("{}\n", server_counters_text(server, o.ws.stats->floods.load()));
  }
  return 0;
}

}  // namespace

Runner add_pingpong_server_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("pingpong-server", "Answer every message with the same payload (checked or gNB framing)");
  auto o = std::make_shared<ServerOptions>();
  add_listen_flags(*cmd, o->listen);
  cmd->add_option("-t,--threads", o->threads, "Worker loops; connections are spread round-robin")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_flag("--busy-poll", o->busy_poll, "Worker loops spin instead of sleeping in the kernel (a CPU each)");
  cmd->add_flag("--json", o->json, "Print the final totals as JSON on stdout");
  cmd->add_flag("!--no-progress", o->progress, "No progress line each second on stderr");
  add_session_flags(*cmd, o->session);
  add_tls_server_flags(*cmd, o->tls);
  add_websocket_flags(*cmd, o->ws);
  add_metrics_flag(*cmd, o->metrics);
  add_design_flag(*cmd, o->design);
  return [o] { return run_server(*o); };
}

}  // namespace volley::tools
