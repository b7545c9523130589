// `volley rpc-server` and `volley rpc-bench`: the ping-pong and
// request-reply benchmark over Volley's RPC, with its report lines plus
// round-trip percentiles.
#include <atomic>
#include <mutex>
#include <thread>

#include <boost/asio/steady_timer.hpp>
#include <boost/json/array.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <volley/metrics/histogram.hpp>
#include <volley/net/gather.hpp>
#include <volley/net/server.hpp>
#include <volley/rpc/client.hpp>
#include <volley/rpc/frame.hpp>
#include <volley/rpc/server.hpp>
#include "benchmark_messages.hpp"
#include "output.hpp"

#include "commands.hpp"
#include "duration_flag.hpp"
#include "json_output.hpp"
#include "endpoint.hpp"
#include "listening.hpp"
#include "metrics_service.hpp"
#include "session_options.hpp"
#include "tls_flags.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;
constexpr std::uint32_t kPing = 1, kPong = 2, kRequest = 3, kReply = 4;  // the benchmark's message ids

struct RpcOptions {
  ShmFlags shm{};  // --shm, --shm-spin
  std::string host = "127.0.0.1";
  std::uint16_t port = 32102;
  std::size_t threads = 1;
  std::string mode = "both";
  std::size_t string_length = 22;
  std::size_t in_flight = 1;
  double seconds = 5;
  bool json = false;
  ListenFlags listen{.bind = kDefaultBind, .port = 32102, .port_file = {}};  // rpc-server
  TlsServerFlags server_tls;
  WebSocketFlags ws;                                                      // both                                              // rpc-server
  SessionFlags session{.framing = "rpc"};                                 // rpc-server
  TlsClientFlags client_tls;                                              // rpc-bench
  MetricsFlags metrics;                                                   // rpc-server
  net::Design design = net::Design::loop_per_thread;                      // rpc-server
};

int run_server(const RpcOptions& o) {
  std::atomic<std::uint64_t> served{0};
  rpc::RpcServer rpc;
  rpc.handle<benchmarks::Ping, benchmarks::Pong>(kPing, kPong, [&](const benchmarks::Ping& p) {
    served.fetch_add(1, std::memory_order_relaxed);
    return benchmarks::answer(p);
  });
  rpc.handle<benchmarks::Request, benchmarks::Reply>(kRequest, kReply, [&](const benchmarks::Request& r) {
    served.fetch_add(1, std::memory_order_relaxed);
    return benchmarks::answer(r);
  });
  net::ServerOptions server_opts = server_options(o.listen, o.threads);
  server_opts.design = o.design;
  apply_tls(server_opts, o.server_tls);
  apply_websocket(server_opts, o.ws, rpc::frame_size);
  apply_shm(server_opts, o.listen.shm);
  net::Server server(server_opts);
  std::vector<rpc::RpcServerStats> stats(server.threads());  // one per worker slot
  // In the thread-pool design a slot's sessions run on strands of their own,
  // on either thread: they count into the slot's stats under its lock.
  const bool pool = o.design == net::Design::thread_pool;
  std::vector<std::mutex> stats_locks(server.threads());
  try {
    const net::SessionOptions session_options = o.session.options();
    server.listen([&rpc, &stats, &stats_locks, pool, session_options](std::size_t worker) {
      return rpc.make_session(session_options, rpc::kDefaultMaxBody, &stats[worker],
                              pool ? &stats_locks[worker] : nullptr);
    });
  } catch (const std::exception& e) {
    tools::print(stderr, "volley rpc-server: cannot listen on {}:{}: {}\n", o.listen.bind, o.listen.port, e.what());
    return 1;
  }
  // Each worker's stats are its loop's: a scrape copies them there. Sessions'
  // traffic counts are added as each closes; requests are counted as they come.
  MetricsService metrics(server, o.metrics, [&](http::MetricsEndpoint::Answer answer) {
    net::gather<rpc::RpcServerStats>(
        server.workers(),
        [&](std::size_t w) {
          if (!pool) return stats[w];  // on the worker's own loop
          const std::lock_guard lock(stats_locks[w]);
          return stats[w];
        },
        [&server, &served, answer, ws = o.ws](std::vector<rpc::RpcServerStats> parts) {
          SessionTotals sessions;
          std::uint64_t requests = 0, error_replies = 0, ended = 0;
          for (const auto& p : parts) {
            sessions.opened += p.sessions;
            sessions.stats += p.traffic;
            for (std::size_t k = 0; k < net::CloseReason::kKinds; ++k) {
              sessions.closes[k] += p.closes[k];
              ended += p.closes[k];
            }
            requests += p.requests;
            error_replies += p.error_replies;
          }
          sessions.open = sessions.opened >= ended ? sessions.opened - ended : 0;
          metrics::PrometheusText out;
          out.family("volley_rpc_requests_total", "counter", "RPC requests received.");
          out.sample("volley_rpc_requests_total", static_cast<double>(requests));
          out.family("volley_rpc_calls_answered_total", "counter", "RPC requests a handler answered.");
          out.sample("volley_rpc_calls_answered_total", static_cast<double>(served.load()));
          out.family("volley_rpc_error_replies_total", "counter",
                     "Error replies: unknown id, undecodable request, handler failure, reply too large.");
          out.sample("volley_rpc_error_replies_total", static_cast<double>(error_replies));
          write_session_metrics(out, sessions);
          write_server_metrics(out, server, ws);
          answer(out.text());
        });
  });
  server.on_ready([&] {
    const std::string proto = served_proto(o.listen, listening_proto(o.server_tls.tls, o.ws));
    announce_server(proto, server, o.listen.port_file);
    metrics.start();
    spdlog::info("volley rpc-server on {} ({}, {} worker threads, {}, receive path {})", server.listening_text(), proto,
                 server.threads(), net::to_string(o.design), net::to_string(server.workers().receive_path()));
  });
  server.on_stop([&] { metrics.stop(); });
  server.run();
  rpc::RpcServerStats sum;
  for (const auto& s : stats) {
    sum.sessions += s.sessions;
    sum.requests += s.requests;
    sum.error_replies += s.error_replies;
    sum.traffic += s.traffic;
    for (std::size_t k = 0; k < net::CloseReason::kKinds; ++k) sum.closes[k] += s.closes[k];
  }
  boost::json::object closes;
  for (std::size_t k = 0; k < net::CloseReason::kKinds; ++k)
    closes[net::to_string(static_cast<net::CloseReason::Kind>(k))] = sum.closes[k];
  if (o.json) {
    boost::json::object report{{"tool", "volley rpc-server"},
                               {"calls", served.load()},
                               {"sessions", sum.sessions},
                               {"requests", sum.requests},
                               {"error_replies", sum.error_replies},
                               {"protocol_errors", sum.traffic.protocol_errors},
                               {"heartbeats_in", sum.traffic.heartbeats_in},
                               {"heartbeats_out", sum.traffic.heartbeats_out},
                               {"goodbyes_out", sum.traffic.goodbyes_out},
                               {"high_water_events", sum.traffic.high_water_events},
                               {"closes", closes}};
    add_server_counters(report, server, o.ws.stats->floods.load());
    tools::print("{}\n", to_json_text(report));
  } else {
    tools::print("volley rpc-server: {} calls answered; {} sessions, {} requests, {} error replies, {} protocol errors, "
               "{} closed silent (heartbeat timeout)\n",
               served.load(), sum.sessions, sum.requests, sum.error_replies, sum.traffic.protocol_errors,
               sum.closes[static_cast<std::size_t>(net::CloseReason::Kind::heartbeat_timeout)]);
    tools::print("{}\n", server_counters_text(server, o.ws.stats->floods.load()));
  }
  return 0;
}

struct Exchange {
  std::string name;
  metrics::Histogram rtt_ns;
  std::uint64_t round_trips = 0;
  double seconds = 0;
  double serialization_ns = 0;  // one encode or decode, measured apart (see below)
  std::string error;
};

// Serialization cost per operation, measured on this run's own messages in a
// tight loop: timing each 5-30 ns operation with the clock would mostly measure
// the clock. One round trip is two operations on the client (encode the
// request, decode the reply).
template <class Request, class Reply>
double serialization_ns(const Request& request, const Reply& reply) {
  std::vector<std::byte> buffer(serial::encoded_size(request) + serial::encoded_size(reply) + 64);
  std::vector<std::byte> encoded_reply;
  serial::encode_append(reply, encoded_reply);
  Reply out{};
  std::error_code ec;
  constexpr int kRounds = 200'000;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    serial::encode(request, buffer, ec);
    serial::decode(encoded_reply, out, ec);
  }
  const double total = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  return total / (2.0 * kRounds);
}

template <class Request, class Reply>
Exchange run_exchange(const RpcOptions& o, const std::string& name, std::uint32_t request_id, std::uint32_t reply_id,
                      std::function<Request(std::uint64_t)> make) {
  Exchange x;
  x.name = name;
  asio::io_context loop(1);
  rpc::RpcClient client(loop);
  boost::system::error_code ec;
  const TransportFactory transport = shm_client_transport(
      o.shm, o.host,
      websocket_client_transport(tls_client_transport(o.client_tls, o.host), o.ws, o.host, o.port, rpc::frame_size));
  client.connect(o.host, o.port, std::chrono::seconds(5), transport ? transport() : nullptr, ec);
  if (ec) {
    x.error = "cannot connect to " + endpoint_text(o.host, o.port) + ": " + ec.message();
    if (!client.last_remote_error().empty()) x.error += " (" + client.last_remote_error() + ")";
    return x;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(o.seconds));
  std::uint64_t issued = 0, outstanding = 0;
  std::function<void()> issue = [&] {
    const auto sent = std::chrono::steady_clock::now();
    const Request request = make(issued++);
    ++outstanding;
    client.call<Reply>(request_id, reply_id, request, std::chrono::seconds(10),
                       [&, sent, request](const std::error_code& e, Reply reply) {
                         --outstanding;
                         const auto now = std::chrono::steady_clock::now();
                         if (e) {
                           x.error = e.message();
                         } else if (!(reply == benchmarks::answer(request))) {
                           x.error = "a reply did not match its request";
                         } else {
                           x.rtt_ns.record(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - sent).count()));
                           ++x.round_trips;
                         }
                         if (x.error.empty() && now < end) issue();
                         else if (outstanding == 0) loop.stop();
                       });
  };
  for (std::size_t i = 0; i < o.in_flight; ++i) issue();
  loop.run();
  x.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  x.serialization_ns = serialization_ns(make(0), benchmarks::answer(make(0)));
  return x;
}

void print_seed_lines(const Exchange& x) {
  const double avg_us = x.round_trips ? static_cast<double>(x.rtt_ns.mean()) / 1e3 : 0;
  const std::uint64_t ser_count = 2 * x.round_trips;
  tools::print("{} round trip count: {}\n", x.name, x.round_trips);
  tools::print("{} round trip avg: {:.3f} mcs\n", x.name, avg_us);
  tools::print("{} round trip total: {:.3f} s\n", x.name, x.seconds);
  tools::print("{} round trip p50 / p99 / max: {:.3f} / {:.3f} / {:.3f} mcs\n", x.name,
             static_cast<double>(x.rtt_ns.percentile(50)) / 1e3, static_cast<double>(x.rtt_ns.percentile(99)) / 1e3,
             static_cast<double>(x.rtt_ns.max()) / 1e3);
  tools::print("{} serialization count: {}\n", x.name, ser_count);
  tools::print("{} serialization avg: {:.1f} ns\n", x.name, x.serialization_ns);
  tools::print("{} serialization total: {:.3f} ms\n", x.name, x.serialization_ns * static_cast<double>(ser_count) / 1e6);
}

boost::json::object to_json(const Exchange& x) {
  return {{"name", x.name},
          {"round_trips", x.round_trips},
          {"seconds", x.seconds},
          {"rtt_ns", boost::json::object{{"mean", x.rtt_ns.mean()},
                                         {"p50", x.rtt_ns.percentile(50)},
                                         {"p90", x.rtt_ns.percentile(90)},
                                         {"p99", x.rtt_ns.percentile(99)},
                                         {"max", x.rtt_ns.max()},
                                         {"min", x.rtt_ns.min()}}},
          {"serialization_count", 2 * x.round_trips},
          {"serialization_ns_avg", x.serialization_ns},
          {"error", x.error}};
}

int run_bench(const RpcOptions& o) {
  if (o.mode != "ping" && o.mode != "request" && o.mode != "both") {
    tools::print(stderr, "volley rpc-bench: --mode must be ping, request or both\n");
    return 2;
  }
  std::vector<Exchange> results;
  if (o.mode != "request")
    results.push_back(run_exchange<benchmarks::Ping, benchmarks::Pong>(o, "ping - pong", kPing, kPong, [](std::uint64_t i) {
      return benchmarks::Ping{static_cast<std::int64_t>(i)};
    }));
  if (o.mode != "ping") {
    const std::string text(o.string_length, 's');
    results.push_back(run_exchange<benchmarks::Request, benchmarks::Reply>(o, "request - reply", kRequest, kReply, [&](std::uint64_t i) {
      return benchmarks::Request{text, static_cast<double>(i) * 0.5, static_cast<std::int8_t>(i), static_cast<std::int16_t>(i),
                             static_cast<std::int32_t>(i)};
    }));
  }
  bool ok = true;
  for (const auto& x : results) ok = ok && x.error.empty();
  if (o.json) {
    boost::json::array list;
    for (const auto& x : results) list.push_back(to_json(x));
    tools::print("{}\n", to_json_text(boost::json::object{{"tool", "volley rpc-bench"}, {"in_flight", o.in_flight},
                                                        {"string_length", o.string_length}, {"results", std::move(list)}}));
  } else {
    for (const auto& x : results) {
      print_seed_lines(x);
      if (!x.error.empty()) tools::print("{} error: {}\n", x.name, x.error);
    }
  }
  return ok ? 0 : 1;
}

}  // namespace

Runner add_rpc_commands(CLI::App& app) {
  auto o = std::make_shared<RpcOptions>();
  auto* server = app.add_subcommand("rpc-server", "RPC server of the ping-pong and request-reply benchmarks: Ping (id 1) answered with Pong (2), Request (3) with Reply (4)");
  add_listen_flags(*server, o->listen);
  server->add_option("-t,--threads", o->threads, "Worker loops")->capture_default_str()->check(CLI::Range(1, 256));
  server->add_flag("--json", o->json, "Print the final report as JSON");
  add_tls_server_flags(*server, o->server_tls);
  add_websocket_flags(*server, o->ws);
  add_design_flag(*server, o->design);
  add_session_flags(*server, o->session, /*with_framing=*/false);
  add_metrics_flag(*server, o->metrics);
  auto* bench = app.add_subcommand("rpc-bench", "Ping-pong and request-reply round trips against volley rpc-server");
  add_connect_flags(*bench, o->host, o->port);
  add_unix_connect_flags(*bench, o->host, o->shm);
  bench->add_option("--mode", o->mode, "The exchanges to time: Ping/Pong, Request/Reply or both")
      ->option_text("ping|request|both")
      ->check(CLI::IsMember({"ping", "request", "both"}))
      ->capture_default_str();
  bench->add_option("--string-length", o->string_length, "Characters of the Request's string (22 and 23 straddle the small-string optimisation; try 100000 too)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, rpc::kDefaultMaxBody - 64));  // the request fits the server's default maximum body
  bench->add_option("--in-flight", o->in_flight, "Calls in flight at once on the connection")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  add_duration_option(*bench, "-z,--duration", o->seconds, "How long to time each exchange", 0.001, kMaxRunSeconds);
  add_old_duration_alias(*bench, "--seconds", o->seconds, 1.0, 0.001, kMaxRunSeconds);
  bench->add_flag("--json", o->json, "Print the report as JSON");
  add_tls_client_flags(*bench, o->client_tls);
  add_websocket_flags(*bench, o->ws);
  return [o, server] { return server->parsed() ? run_server(*o) : run_bench(*o); };
}

}  // namespace volley::tools
