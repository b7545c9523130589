// `volley gen` / `traffic_generator`: shoots gNB messages at a target.
#include <atomic>
#include <csignal>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/array.hpp>
#include <fmt/core.h>

#include <volley/net/session.hpp>
#include <volley/gnb/protocol.hpp>
#include <volley/gnb/session_codec.hpp>
#include <volley/net/session_codec.hpp>
#include <volley/net/loop_pool.hpp>
#include <volley/net/tcp_connect.hpp>

#include "commands.hpp"
#include "output.hpp"
#include "duration_flag.hpp"
#include "gen_connection.hpp"
#include "json_output.hpp"
#include "endpoint.hpp"
#include "listening.hpp"
#include "session_options.hpp"
#include "tls_flags.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;

struct GenOptions {
  ShmFlags shm{};  // --shm, --shm-spin
  std::vector<std::string> specs;
  double seconds = 10;
  std::string host = "127.0.0.1";
  std::uint16_t port = 32101;
  std::vector<std::string> servers;  // --server: the connections go to these in turn
  std::size_t connections = 1;
  std::size_t threads = 0;
  double rate = 0;
  bool random_payload = false;
  bool allow_invalid = false;
  bool json = false;
  bool progress = true;
  TlsClientFlags tls;
  WebSocketFlags ws;
  std::int64_t heartbeat_ms = 0;
  unsigned heartbeat_misses = 3;
};

// Replies from the target reach the connection through a session with the gNB
// codec (which takes keepalives; with --heartbeat it sends them too).
class GenEvents final : public net::SessionEvents {
 public:
  explicit GenEvents(GenConnection& gen) : gen_(gen) {}
  void on_open(net::Session&) override { gen_.on_opened(); }
  void on_message(net::Session&, const net::Message& reply) override { gen_.on_reply(gnb::frame_of(reply)); }
  void on_protocol_error(net::Session&, const std::error_code&, std::span<const std::byte>, bool) override {
    gen_.on_bad_input();
  }
  void on_written(net::Session&, std::size_t bytes) override { gen_.on_written(bytes); }
  void on_close(net::Session&, const net::CloseReason& reason) override { gen_.on_closed(reason); }

 private:
  GenConnection& gen_;
};

std::string type_label(std::uint16_t type) {
  const auto index = gnb::type_index(type);
  return index ? std::string(gnb::kTypes[*index].name) : "invalid";
}

// A server the connections go to, and how many went there.
struct GenServer {
  std::string host;
  std::uint16_t port = 0;
  std::string address;  // as reported: ADDRESS:PORT, or the Unix address
  TransportFactory transport;
  std::size_t connections = 0;
};

struct Summary {
  std::vector<GenServer> servers;
  GenResults merged;
  double seconds = 0;
  std::size_t clean_connections = 0;
  std::vector<std::string> close_problems;
  std::uint64_t frames() const {
    std::uint64_t n = 0;
    for (auto f : merged.frames_per_spec) n += f;
    return n;
  }
  std::uint64_t bytes() const {
    std::uint64_t n = 0;
    for (auto b : merged.bytes_per_spec) n += b;
    return n;
  }
  // Requests sent that no reply answered (all of them against a target that
  // does not reply): what a target lost shows here, not only in a missing ack.
  std::uint64_t unanswered(const GenConfig& config) const {
    std::uint64_t requests = 0;
    for (std::size_t i = 0; i < config.specs.size(); ++i)
      if (expects_reply(config.specs[i])) requests += merged.frames_per_spec[i];
    const std::uint64_t matched = merged.acks + merged.nacks + merged.ack_checksums - merged.unmatched_replies;
    return requests - std::min(requests, matched);
  }
};

Summary summarize(const GenConfig& config, const std::vector<std::unique_ptr<GenConnection>>& connections,
                  std::vector<GenServer> servers) {
  Summary s;
  s.servers = std::move(servers);
  s.merged.frames_per_spec.assign(config.specs.size(), 0);
  s.merged.bytes_per_spec.assign(config.specs.size(), 0);
  for (const auto& c : connections) {
    const GenResults& r = c->results();
    for (std::size_t i = 0; i < config.specs.size(); ++i) {
      s.merged.frames_per_spec[i] += r.frames_per_spec[i];
      s.merged.bytes_per_spec[i] += r.bytes_per_spec[i];
    }
    s.merged.acks += r.acks;
    s.merged.nacks += r.nacks;
    s.merged.ack_checksums += r.ack_checksums;
    s.merged.checksum_mismatches += r.checksum_mismatches;
    s.merged.unmatched_replies += r.unmatched_replies;
    s.merged.unexpected_frames += r.unexpected_frames;
    s.merged.protocol_errors += r.protocol_errors;
    s.merged.refused_sends += r.refused_sends;
    s.merged.keepalives_in += r.keepalives_in;
    s.merged.keepalives_out += r.keepalives_out;
    s.merged.rtt_ns.merge(r.rtt_ns);
    s.seconds = std::max(s.seconds, std::chrono::duration<double>(r.send_time).count());
    if (r.clean) {
      ++s.clean_connections;
    } else {
      s.close_problems.push_back(r.close_reason);
    }
  }
  return s;
}

void print_text(const GenOptions& o, const GenConfig& config, const Summary& s) {
  const double msgs = static_cast<double>(s.frames());
  const double secs = s.seconds > 0 ? s.seconds : 1e-9;
  std::string where;
  for (const GenServer& server : s.servers)
    where += (where.empty() ? "" : ", ") + server.address +
             (s.servers.size() > 1 ? fmt::format(" ({} connections)", server.connections) : std::string());
  tools::print("volley gen report: {}, {} connection(s), {:.3f} s of sending{}\n", where, o.connections, s.seconds,
               o.rate > 0 ? fmt::format(", paced at {:.0f} msgs/s", o.rate) : std::string(", unpaced"));
  tools::print("  {:<6} {:<13} {:>8} {:>5} {:>14} {:>16}\n", "type", "name", "size", "frac", "frames", "bytes");
  for (std::size_t i = 0; i < config.specs.size(); ++i) {
    const auto& spec = config.specs[i];
    tools::print("  {:04x}   {:<13} {:>8} {:>5} {:>14} {:>16}\n", spec.type, type_label(spec.type), spec.size,
               spec.fraction, s.merged.frames_per_spec[i], s.merged.bytes_per_spec[i]);
  }
  tools::print("  total  {:>42} {:>16}\n", s.frames(), s.bytes());
  tools::print("  throughput: {:.0f} msgs/s, {:.1f} MB/s; {:.1f} ns per message (inverse throughput, not latency)\n",
             msgs / secs, static_cast<double>(s.bytes()) / secs / 1e6, secs * 1e9 / std::max(msgs, 1.0));
  const auto& r = s.merged;
  if (r.acks + r.nacks + r.ack_checksums > 0) {
    const auto& h = r.rtt_ns;
    tools::print("  replies: ack {}, nack {}, ack-checksum {} ({} checksum mismatches), unmatched {}, requests unanswered {}\n",
               r.acks, r.nacks, r.ack_checksums, r.checksum_mismatches, r.unmatched_replies, s.unanswered(config));
    tools::print("  control round trip (us): p50 {:.1f}  p90 {:.1f}  p99 {:.1f}  p99.9 {:.1f}  max {:.1f}  ({} samples)\n",
               static_cast<double>(h.percentile(50)) / 1e3, static_cast<double>(h.percentile(90)) / 1e3,
               static_cast<double>(h.percentile(99)) / 1e3, static_cast<double>(h.percentile(99.9)) / 1e3,
               static_cast<double>(h.max()) / 1e3, h.count());
  } else {
    tools::print("  replies: none (start the target with --reply ack to measure control round trips)\n");
  }
  if (r.unexpected_frames + r.protocol_errors > 0)
    tools::print("  unexpected frames from the target: {}, undecodable input: {}\n", r.unexpected_frames,
               r.protocol_errors);
  if (o.heartbeat_ms > 0 || r.keepalives_in > 0)
    tools::print("  keepalives: received {}, sent {} (heartbeats {})\n", r.keepalives_in, r.keepalives_out,
               o.heartbeat_ms > 0 ? fmt::format("every {} ms", o.heartbeat_ms) : std::string("off"));
  if (r.refused_sends > 0)
    tools::print("  sends refused over the session's high-water mark (sent again later): {}\n", r.refused_sends);
  for (const auto& p : s.close_problems) tools::print("  connection ended early: {}\n", p);
}

boost::json::object to_json(const GenOptions& o, const GenConfig& config, const Summary& s) {
  boost::json::array specs;
  for (std::size_t i = 0; i < config.specs.size(); ++i) {
    const auto& spec = config.specs[i];
    specs.push_back(boost::json::object{{"type", fmt::format("0x{:04x}", spec.type)},
                                        {"name", type_label(spec.type)},
                                        {"size", spec.size},
                                        {"fraction", spec.fraction},
                                        {"frames", s.merged.frames_per_spec[i]},
                                        {"bytes", s.merged.bytes_per_spec[i]}});
  }
  const double secs = s.seconds > 0 ? s.seconds : 1e-9;
  const double msgs = static_cast<double>(s.frames());
  const auto& r = s.merged;
  const auto& h = r.rtt_ns;
  boost::json::array problems;
  for (const auto& p : s.close_problems) problems.push_back(boost::json::string(p));
  boost::json::array servers;
  for (const GenServer& server : s.servers)
    servers.push_back(boost::json::object{{"address", server.address}, {"connections", server.connections}});
  return boost::json::object{
      {"tool", "volley gen"},
      {"host", o.host},
      {"port", o.port},
      {"servers", std::move(servers)},
      {"connections", o.connections},
      {"rate", o.rate},
      {"seconds", s.seconds},
      {"specs", std::move(specs)},
      {"frames", s.frames()},
      {"bytes", s.bytes()},
      {"msgs_per_s", msgs / secs},
      {"mb_per_s", static_cast<double>(s.bytes()) / secs / 1e6},
      {"ns_per_msg_inverse_throughput", secs * 1e9 / std::max(msgs, 1.0)},
      {"replies", boost::json::object{{"ack", r.acks},
                                      {"nack", r.nacks},
                                      {"ack_checksum", r.ack_checksums},
                                      {"checksum_mismatches", r.checksum_mismatches},
                                      {"unmatched", r.unmatched_replies},
                                      {"unanswered", s.unanswered(config)}}},
      {"rtt_ns", boost::json::object{{"count", h.count()},
                                     {"min", h.min()},
                                     {"mean", h.mean()},
                                     {"p50", h.percentile(50)},
                                     {"p90", h.percentile(90)},
                                     {"p99", h.percentile(99)},
                                     {"p999", h.percentile(99.9)},
                                     {"max", h.max()}}},
      {"unexpected_frames", r.unexpected_frames},
      {"undecodable_input", r.protocol_errors},
      {"refused_sends", r.refused_sends},
      {"heartbeat_ms", o.heartbeat_ms},
      {"keepalives", boost::json::object{{"received", r.keepalives_in}, {"sent", r.keepalives_out}}},
      {"clean_connections", s.clean_connections},
      {"connection_problems", std::move(problems)},
  };
}

int run_gen(const GenOptions& o) {
  GenConfig config;
  for (const auto& text : o.specs) {
    std::string error;
    const auto spec = parse_spec(text, error);
    if (!spec) {
      tools::print(stderr, "volley gen: -m {}\n", error);
      return 2;
    }
    config.specs.push_back(*spec);
  }
  if (const std::string error = validate_specs(config.specs, o.allow_invalid); !error.empty()) {
    tools::print(stderr, "volley gen: {}\n", error);
    return 2;
  }
  config.order = interleave(config.specs);
  config.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(o.seconds));
  config.rate_per_connection = o.rate / static_cast<double>(o.connections);
  config.payload = o.random_payload ? PayloadKind::random : PayloadKind::filler;

  const std::size_t threads =
      o.threads ? o.threads : std::min<std::size_t>(o.connections, std::max(1u, std::thread::hardware_concurrency()));
  // Where the connections go: each --server in turn, else --address and --port.
  std::vector<GenServer> servers;
  if (o.servers.empty()) servers.push_back({o.host, o.port, endpoint_text(o.host, o.port), {}, 0});
  for (const std::string& text : o.servers) {
    GenServer server{{}, 0, text, {}, 0};
    if (!net::split_server_address(text, server.host, server.port)) {
      tools::print(stderr, "volley gen: --server {}: not ADDRESS:PORT or unix:PATH\n", text);
      return 2;
    }
    servers.push_back(std::move(server));
  }
  for (GenServer& server : servers)
    server.transport = shm_client_transport(o.shm, server.host,
                                            websocket_client_transport(tls_client_transport(o.tls, server.host), o.ws,
                                                                       server.host, server.port, gnb::frame_size));
  net::ConnectionLimits limits;
  limits.handshake_timeout = std::chrono::seconds(5);
  net::LoopPool loops(threads);
  net::SessionOptions session_options;
  session_options.heartbeat_interval = std::chrono::milliseconds(o.heartbeat_ms);
  session_options.heartbeat_misses = o.heartbeat_misses;
  std::vector<std::unique_ptr<GenConnection>> gens;
  std::vector<std::shared_ptr<net::TcpConnection>> connections;
  std::vector<net::Session*> sessions;
  for (std::size_t i = 0; i < o.connections; ++i) {
    auto& loop = loops.loop(i % loops.size());
    GenServer& server = servers[i % servers.size()];
    std::error_code ec;
    auto socket = net::connect_tcp(loop, server.host, server.port, std::chrono::seconds(5), ec);
    if (ec) {
      tools::print(stderr, "volley gen: cannot connect to {}: {}\n", server.address, ec.message());
      return 1;
    }
    ++server.connections;
    gens.push_back(std::make_unique<GenConnection>(config, i, loop));
    auto session = std::make_unique<net::Session>(gnb::make_gnb_codec(), session_options,
                                                  std::make_unique<GenEvents>(*gens.back()));
    sessions.push_back(session.get());
    connections.push_back(std::make_shared<net::TcpConnection>(std::move(socket), std::move(session), limits,
                                                               server.transport ? server.transport() : nullptr));
  }

  asio::io_context main_loop(1);
  std::atomic<std::size_t> finished{0};
  asio::steady_timer progress(main_loop);
  asio::signal_set signals(main_loop, SIGINT, SIGTERM, SIGHUP);  // SIGHUP: as SIGTERM
  bool done = false;  // a cancel() can miss a tick whose handler is already queued
  auto all_done = [&] {
    done = true;
    progress.cancel();
    signals.cancel();
  };
  for (std::size_t i = 0; i < gens.size(); ++i) {
    asio::post(loops.loop(i % loops.size()), [&, i, connection = connections[i]] {
      gens[i]->start(connection, *sessions[i], [&] {
        if (++finished == gens.size()) asio::post(main_loop, all_done);
      });
    });
  }
  connections.clear();  // each connection now keeps itself alive while it has work

  const auto start = Clock::now();
  std::uint64_t last_frames = 0, last_bytes = 0;
  std::function<void()> tick = [&] {
    progress.expires_after(std::chrono::seconds(1));
    progress.async_wait([&](const boost::system::error_code& ec) {
      if (ec || done) return;
      std::uint64_t frames = 0, bytes = 0, replies = 0;
      for (const auto& g : gens) {
        frames += g->frames_sent();
        bytes += g->bytes_sent();
        replies += g->replies();
      }
      tools::print(stderr, "[gen {:6.1f}s] {:>10} msgs/s {:>9.1f} MB/s | total {} msgs, {} replies\n",
                 seconds_since(start), frames - last_frames, static_cast<double>(bytes - last_bytes) / 1e6, frames,
                 replies);
      last_frames = frames;
      last_bytes = bytes;
      tick();
    });
  };
  if (o.progress) tick();
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    for (std::size_t i = 0; i < gens.size(); ++i) asio::post(loops.loop(i % loops.size()), [&, i] { gens[i]->stop(); });
  });

  loops.start();
  loops.release();  // each loop returns once its connections are closed
  main_loop.run();
  loops.join();

  const Summary summary = summarize(config, gens, std::move(servers));
  if (o.json) {
    tools::print("{}\n", to_json_text(to_json(o, config, summary)));
  } else {
    print_text(o, config, summary);
  }
  return summary.clean_connections == gens.size() ? 0 : 3;
}

}  // namespace

Runner add_gen_options(CLI::App& app) {
  auto o = std::make_shared<GenOptions>();
  app.add_option("-m,--message", o->specs,
                 "TYPE:SIZE:FRACTION, repeatable: hex type (1001 control, 1002 ack, 1003 nack, 1004 ack-checksum, "
                 "8001 data), body size in bytes, messages of every 100 (fractions add up to 100)")
      ->option_text("TYPE:SIZE:FRACTION ...")
      ->required()
      ->take_all();
  add_duration_option(app, "-t,--duration", o->seconds, "How long to send", 0.001, kMaxRunSeconds);
  add_old_duration_alias(app, "--time", o->seconds, 1.0, 0.001, kMaxRunSeconds);
  add_connect_flags(app, o->host, o->port);
  add_unix_connect_flags(app, o->host, o->shm);
  app.add_option("--server", o->servers,
                 "Spread the connections over several servers, each in turn (repeatable; instead of "
                 "--address/--port; unix:PATH for a Unix socket)")
      ->type_name("ADDRESS:PORT")
      ->take_all();
  app.add_option("-c,--connections", o->connections, "Parallel TCP connections")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--threads", o->threads, "Event loops")
      ->default_str("min(connections, cores)")
      ->check(CLI::Range(0, 256));
  app.add_option("-r,--rate", o->rate, "Messages per second over all connections; 0 sends as fast as possible")
      ->type_name("PER-SECOND")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--random-payload", o->random_payload, "Random body bytes instead of a constant filler");
  app.add_flag("--allow-invalid", o->allow_invalid,
               "Send unknown types and out-of-limit sizes on purpose (robustness testing)");
  add_heartbeat_flags(app, o->heartbeat_ms, o->heartbeat_misses,
                      "; the keepalive is six zero bytes, for a target that understands it (volley target "
                      "--heartbeat). Received keepalives are always accepted");
  app.add_flag("--json", o->json, "Print the final report as JSON on stdout");
  app.add_flag("!--no-progress", o->progress, "Do not print a progress line each second on stderr");
  add_tls_client_flags(app, o->tls);
  add_websocket_flags(app, o->ws);
  return [o] { return run_gen(*o); };
}

}  // namespace volley::tools
