// `volley target`: the server the traffic generator shoots at.
#include <sys/resource.h>

#include <cstdio>
#include <thread>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <volley/net/server.hpp>
#include <volley/net/session.hpp>
#include <volley/gnb/session_codec.hpp>
#include <volley/net/session_codec.hpp>

#include "commands.hpp"
#include "output.hpp"
#include "json_output.hpp"
#include "listening.hpp"
#include "metrics_service.hpp"
#include "tls_flags.hpp"
#include "progress_timer.hpp"
#include "session_options.hpp"
#include "target_handler.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;

struct TargetOptions {
  ListenFlags listen{.bind = kDefaultBind, .port = 32101, .port_file = {}};
  std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  HandlerKind handler = HandlerKind::variant;
  ReplyMode reply = ReplyMode::none;
  bool json = false;
  bool progress = true;
  TlsServerFlags tls;
  WebSocketFlags ws;
  std::int64_t heartbeat_ms = 0;
  unsigned heartbeat_misses = 3;
  MetricsFlags metrics;
  net::Design design = net::Design::loop_per_thread;

  net::SessionOptions session_options() const {
    net::SessionOptions s;
    s.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
    s.heartbeat_misses = heartbeat_misses;
    return s;
  }
};

const char* to_string(HandlerKind k) {
  return k == HandlerKind::variant ? "variant" : k == HandlerKind::virtual_dispatch ? "virtual" : "dummy";
}
const char* to_string(ReplyMode r) { return r == ReplyMode::none ? "none" : r == ReplyMode::ack ? "ack" : "ack-checksum"; }

// Each connection runs a session with the gNB codec: keepalives (when on) and the
// liveness check are the session's, the frames go to the chosen handler.
template <HandlerKind Kind>
std::unique_ptr<net::StreamHandler> make_session(const TargetOptions& o, TargetStats& stats) {
  return std::make_unique<net::Session>(gnb::make_gnb_codec(), o.session_options(),
                                        std::make_unique<TargetEvents<Kind>>(o.reply, stats));
}

std::unique_ptr<net::StreamHandler> make_handler(const TargetOptions& o, TargetStats& stats) {
  switch (o.handler) {
    case HandlerKind::variant: return make_session<HandlerKind::variant>(o, stats);
    case HandlerKind::virtual_dispatch: return make_session<HandlerKind::virtual_dispatch>(o, stats);
    case HandlerKind::dummy: break;
  }
  return make_session<HandlerKind::dummy>(o, stats);
}

// CPU time the whole process used: what the frames cost the target, whatever
// the sender's speed (the generator's ns per message mostly measures the sender).
double process_cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

double cpu_ns_per_frame(double cpu_seconds, const TargetTotals& t) {
  return t.frames() ? cpu_seconds * 1e9 / static_cast<double>(t.frames()) : 0.0;
}

void print_text_report(const TargetOptions& o, const TargetTotals& t, double seconds, double cpu_seconds) {
  tools::print("volley target report: handler {}, reply {}, {} worker thread(s), up {:.3f} s\n", to_string(o.handler),
             to_string(o.reply), o.threads, seconds);
  tools::print("  {:<6} {:<13} {:>14} {:>16} {:>12} {:>12}\n", "type", "name", "frames", "bytes", "too long", "too short");
  for (std::size_t i = 0; i < t.types.size(); ++i) {
    const auto& info = gnb::kTypes[i];
    tools::print("  {:04x}   {:<13} {:>14} {:>16} {:>12} {:>12}\n", static_cast<unsigned>(info.type), info.name,
               t.types[i].frames, t.types[i].bytes, t.types[i].rejected_too_long, t.types[i].rejected_too_short);
  }
  tools::print("  total  {:>28} {:>16}\n", t.frames(), t.bytes());
  tools::print("  protocol errors (connection closed): unknown type {}, length over 64 KiB {}\n", t.unknown_type,
             t.length_over_maximum);
  tools::print("  replies sent: ack {}, nack {}, ack-checksum {}\n", t.replies_ack, t.replies_nack,
             t.replies_ack_checksum);
  tools::print("  connections: accepted {}, closed by peer {}, protocol error {}, i/o error {}, shutdown {}, "
             "slow consumer {}, idle {}, mid-frame {}\n",
             t.connections_opened, t.closed_peer, t.closed_protocol_error, t.closed_io_error, t.closed_shutdown,
             t.closed_slow_consumer, t.closed_idle, t.closed_mid_frame);
  tools::print("  heartbeats: {}; keepalives received {}, sent {}; connections closed silent {}\n",
             o.heartbeat_ms > 0 ? fmt::format("every {} ms, {} misses", o.heartbeat_ms, o.heartbeat_misses) : "off",
             t.keepalives_in, t.keepalives_out, t.closed_heartbeat_timeout);
  tools::print("  cpu: {:.3f} s user+system, {:.1f} ns per frame\n", cpu_seconds, cpu_ns_per_frame(cpu_seconds, t));
}

int run_target(const TargetOptions& o) {
  net::ServerOptions server_opts = server_options(o.listen, o.threads);
  server_opts.design = o.design;
  apply_tls(server_opts, o.tls);
  apply_websocket(server_opts, o.ws, gnb::frame_size);
  apply_shm(server_opts, o.listen.shm);
  net::Server server(server_opts);
  std::vector<TargetStats> stats(server.threads());
  for (auto& st : stats) st.shared = o.design == net::Design::thread_pool;
  try {
    server.listen([&](std::size_t w) { return make_handler(o, stats[w]); });
  } catch (const std::exception& e) {
    tools::print(stderr, "volley target: cannot listen on {}: {}\n", server_opts.bind, e.what());
    return 1;
  }

  // The counters are relaxed atomics: a scrape sums them where it is.
  MetricsService metrics(server, o.metrics, [&](http::MetricsEndpoint::Answer answer) {
    metrics::PrometheusText out;
    write_metrics(out, sum(stats));
    write_server_metrics(out, server, o.ws);
    answer(out.text());
  });

  const auto start = Clock::now();
  TargetTotals last{};
  ProgressTimer progress(server.control_loop(), [&] {
    const TargetTotals now = sum(stats);
    const std::uint64_t frames = now.frames() - last.frames();
    const std::uint64_t bytes = now.bytes() - last.bytes();
    tools::print(stderr, "[target {:6.1f}s] connections {} open | {:>10} frames/s {:>9.1f} MB/s | total {} frames, {} rejected\n",
               seconds_since(start), now.connections_opened - now.closed_peer - now.closed_protocol_error -
                                          now.closed_io_error - now.closed_shutdown - now.closed_slow_consumer -
                                          now.closed_idle - now.closed_heartbeat_timeout - now.closed_handshake_failed,
               frames, static_cast<double>(bytes) / 1e6, now.frames(), now.rejected());
    last = now;
  });
  server.on_ready([&] {
    const std::string proto = served_proto(o.listen, listening_proto(o.tls.tls, o.ws));
    announce_server(proto, server, o.listen.port_file);
    spdlog::info("volley target listening on {} ({}, {} worker threads, {}, receive path {}, handler {}, "
                 "reply {})",
                 server.listening_text(), proto, server.threads(),
                 net::to_string(o.design), net::to_string(server.workers().receive_path()), to_string(o.handler),
                 to_string(o.reply));
    metrics.start();
    if (o.progress) progress.start();
  });
  server.on_stop([&] {
    progress.stop();
    metrics.stop();
  });
  server.run();

  const TargetTotals totals = sum(stats);
  const double seconds = seconds_since(start);
  const double cpu_seconds = process_cpu_seconds();
  if (o.json) {
    boost::json::object report = to_json(totals);
    report["tool"] = "volley target";
    report["handler"] = to_string(o.handler);
    report["reply"] = to_string(o.reply);
    report["heartbeat_ms"] = o.heartbeat_ms;
    report["threads"] = server.threads();
    report["uptime_s"] = seconds;
    report["cpu_s"] = cpu_seconds;
    report["cpu_ns_per_frame"] = cpu_ns_per_frame(cpu_seconds, totals);
    add_server_counters(report, server, o.ws.stats->floods.load());
    tools::print("{}\n", to_json_text(report));
  } else {
    print_text_report(o, totals, seconds, cpu_seconds);
    tools::print("  {}\n", server_counters_text(server, o.ws.stats->floods.load()));
  }
  return 0;
}

}  // namespace

Runner add_target_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("target", "Receive gNB messages on TCP, count them per type, optionally reply");
  auto o = std::make_shared<TargetOptions>();
  add_listen_flags(*cmd, o->listen);
  add_tls_server_flags(*cmd, o->tls);
  add_websocket_flags(*cmd, o->ws);
  add_metrics_flag(*cmd, o->metrics);
  add_design_flag(*cmd, o->design);
  cmd->add_option("-t,--threads", o->threads, "Worker loops (threads); connections are spread round-robin")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  const std::map<std::string, HandlerKind> handlers{{"variant", HandlerKind::variant},
                                                    {"virtual", HandlerKind::virtual_dispatch},
                                                    {"dummy", HandlerKind::dummy}};
  cmd->add_option("--handler", o->handler,
                  "Dispatch: variant (std::visit), virtual (heap copy + dynamic_cast), dummy (no dispatch)")
      ->transform(CLI::CheckedTransformer(handlers, CLI::ignore_case))
      ->option_text("variant|virtual|dummy")
      ->default_str("variant");
  const std::map<std::string, ReplyMode> replies{
      {"none", ReplyMode::none}, {"ack", ReplyMode::ack}, {"ack-checksum", ReplyMode::ack_checksum}};
  cmd->add_option("--reply", o->reply,
                  "Answer control messages: none, ack, ack-checksum (CRC-32C of the body); "
                  "invalid control messages get a nack unless none")
      ->transform(CLI::CheckedTransformer(replies, CLI::ignore_case))
      ->option_text("none|ack|ack-checksum")
      ->default_str("none");
  add_heartbeat_flags(*cmd, o->heartbeat_ms, o->heartbeat_misses,
                      "; the keepalive is six zero bytes, which only Volley's gNB sessions (gen --heartbeat) "
                      "understand. Received keepalives are always accepted");
  cmd->add_flag("--json", o->json, "Print the final report as JSON on stdout");
  cmd->add_flag("!--no-progress", o->progress, "Do not print a progress line each second on stderr");
  return [o] { return run_target(*o); };
}

}  // namespace volley::tools
