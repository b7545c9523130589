// `volley pingpong`: the checked-frame ping-pong benchmark's three groups against a
// `volley pingpong-server`, measured per message.
//   group 1: one client, one message at a time, per payload size: true round trips
//   group 2: one client bursting N messages per size: each message's round trip and the burst's total
//   group 3: several clients bursting short messages: total time and queries per second
#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <volley/net/loop_pool.hpp>
#include <volley/net/tcp_connect.hpp>

#include "commands.hpp"
#include "output.hpp"
#include "json_output.hpp"
#include "endpoint.hpp"
#include "listening.hpp"
#include "pingpong_client.hpp"
#include "session_options.hpp"
#include "tls_flags.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;

struct PingPongOptions {
  ShmFlags shm{};  // --shm, --shm-spin
  std::string address = "127.0.0.1";
  std::uint16_t port = 7777;
  int group = 1;
  std::vector<std::size_t> sizes{1, 10, 100, 1000, 10000, 100000, 1000000};
  std::size_t count = 1000;        // group 1: round trips per size; group 2: burst length
  std::size_t warmup = 100;
  std::size_t max_bytes = 256u << 20;  // caps count x size per step
  std::size_t clients = 5;
  std::size_t messages = 10000;    // group 3: per client
  std::size_t threads = 1;
  bool busy_poll = false;
  bool json = false;
  bool progress = true;
  SessionFlags session;
  TlsClientFlags tls;
  WebSocketFlags ws;
};

std::size_t capped(std::size_t count, std::size_t size, std::size_t max_bytes) {
  return std::max<std::size_t>(1, std::min(count, max_bytes / std::max<std::size_t>(size, 1)));
}

std::vector<PingStep> single_client_steps(const PingPongOptions& o) {
  std::vector<PingStep> steps;
  for (const std::size_t size : o.sizes) {
    const std::size_t n = capped(o.count, size, o.max_bytes);
    const std::size_t warm = std::min(o.warmup, std::max<std::size_t>(1, n / 10));
    const bool burst = o.group == 2;
    if (o.warmup > 0) steps.push_back({size, warm, burst ? warm : 1, true});
    steps.push_back({size, n, burst ? n : 1, false});
  }
  return steps;
}

double ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

boost::json::object step_json(const PingStepResult& r) {
  const auto& h = r.rtt_ns;
  return {{"payload_bytes", r.step.size},  {"messages", r.step.messages}, {"in_flight", r.step.in_flight},
          {"min_us", h.min() / 1e3},       {"avg_us", h.mean() / 1e3},    {"p50_us", h.percentile(50) / 1e3},
          {"p90_us", h.percentile(90) / 1e3}, {"p99_us", h.percentile(99) / 1e3}, {"max_us", h.max() / 1e3},
          {"total_ms", r.seconds() * 1e3}};
}

int run_pingpong(const PingPongOptions& o) {
  const std::size_t clients = o.group == 3 ? o.clients : 1;
  net::LoopPool loops(std::min(o.threads, clients), o.busy_poll);
  const net::SessionOptions session_options = o.session.options();
  const TransportFactory transport = shm_client_transport(
      o.shm, o.address,
      websocket_client_transport(tls_client_transport(o.tls, o.address), o.ws, o.address, o.port, o.session.frame_size()));
  net::ConnectionLimits limits;
  limits.handshake_timeout = std::chrono::seconds(5);

  std::vector<std::unique_ptr<PingPongClient>> runners;
  std::vector<std::shared_ptr<net::TcpConnection>> connections;
  std::atomic<std::size_t> remaining{clients};
  for (std::size_t i = 0; i < clients; ++i) {
    std::vector<PingStep> steps;
    if (o.group == 3) {
      if (o.warmup > 0) steps.push_back({2, o.warmup, o.warmup, true});
      steps.push_back({2, o.messages, o.messages, false});  // "hi": two bytes
    } else {
      steps = single_client_steps(o);
    }
    // Live progress for the single-client groups, whose large payloads take a while.
    std::function<void(const PingStepResult&)> progress;
    if (o.group != 3 && o.progress) {
      progress = [](const PingStepResult& r) {
        tools::print(stderr, "[pingpong] {} B x {}: p50 {:.1f} us, p99 {:.1f} us, {:.1f} ms\n", r.step.size,
                   r.step.messages, r.rtt_ns.percentile(50) / 1e3, r.rtt_ns.percentile(99) / 1e3, r.seconds() * 1e3);
      };
    }
    runners.push_back(std::make_unique<PingPongClient>(std::move(steps), [&remaining] { --remaining; }, progress));
    auto& loop = loops.loop(i % loops.size());
    std::error_code ec;
    auto socket = net::connect_tcp(loop, o.address, o.port, std::chrono::seconds(5), ec);
    if (ec) {
      spdlog::error("cannot connect to {}: {}", endpoint_text(o.address, o.port), ec.message());
      return 1;
    }
    auto session = std::make_unique<net::Session>(o.session.make_codec(), session_options, *runners.back());
    connections.push_back(std::make_shared<net::TcpConnection>(std::move(socket), std::move(session), limits,
                                                               transport ? transport() : nullptr));
  }
  spdlog::info("group {}: {} client(s) on {} loop(s){} connected to {}{}", o.group, clients, loops.size(),
               o.busy_poll ? " (busy-poll)" : "", endpoint_text(o.address, o.port),
               o.shm.on ? " over shared memory" : transport ? " over " + listening_proto(o.tls.tls, o.ws) : std::string());
  for (std::size_t i = 0; i < clients; ++i)
    asio::post(loops.loop(i % loops.size()), [c = connections[i]] { c->start(); });
  loops.release();  // each loop returns once its sessions have closed
  loops.run();      // the first on this thread: one client, one thread

  int status = 0;
  std::uint64_t mismatches = 0;
  for (const auto& r : runners) {
    mismatches += r->mismatches();
    if (!r->error().empty()) {
      spdlog::error("{}", r->error());
      status = 1;
    }
  }
  if (mismatches > 0) {
    spdlog::error("{} echoes did not match what was sent", mismatches);
    status = 1;
  }

  boost::json::object report{{"tool", "volley pingpong"}, {"group", o.group}, {"busy_poll", o.busy_poll},
                             {"framing", o.session.framing}, {"mismatches", mismatches}};
  if (o.group == 3) {
    std::uint64_t queries = 0;
    auto first = PingPongClient::Clock::time_point::max();
    auto last = PingPongClient::Clock::time_point::min();
    metrics::Histogram all;
    for (const auto& r : runners) {
      if (r->results().empty() || r->results().back().step.warmup) continue;
      const auto& m = r->results().back();
      queries += m.rtt_ns.count();
      first = std::min(first, m.started);
      last = std::max(last, m.finished);
      all.merge(m.rtt_ns);
    }
    const double seconds = queries ? std::chrono::duration<double>(last - first).count() : 0.0;
    const double qps = seconds > 0 ? static_cast<double>(queries) / seconds : 0.0;
    report["clients"] = clients;
    report["messages_per_client"] = o.messages;
    report["total_ms"] = seconds * 1e3;
    report["qps"] = qps;
    report["p50_us"] = all.percentile(50) / 1e3;
    report["p99_us"] = all.percentile(99) / 1e3;
    if (o.json) {
      tools::print("{}\n", to_json_text(report));
    } else {
      tools::print("| number of clients | queries per client | time (ms) | QPS | round trip p50 (ms) | p99 (ms) |\n");
      tools::print("| --- | --- | --- | --- | --- | --- |\n");
      tools::print("| {} | {} | {:.3f} | {:.0f} | {:.4f} | {:.4f} |\n", clients, o.messages, seconds * 1e3, qps,
                 ms(all.percentile(50)), ms(all.percentile(99)));
    }
    return status;
  }

  boost::json::array rows;
  if (!o.json) {
    tools::print("Group {}: {} ({} ms, one client)\n", o.group,
               o.group == 1 ? "one message at a time, round trip per message" : "bursts, round trip per message",
               "times in");
    tools::print("| payload size | messages | max | min | avg | p50 | p99 |{}\n", o.group == 2 ? " burst total |" : "");
    tools::print("| --- | --- | --- | --- | --- | --- | --- |{}\n", o.group == 2 ? " --- |" : "");
  }
  for (const auto& r : runners.front()->results()) {
    if (r.step.warmup || r.finished == PingPongClient::Clock::time_point{}) continue;
    rows.push_back(step_json(r));
    if (!o.json) {
      const auto& h = r.rtt_ns;
      tools::print("| {} | {} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.4f} |{}\n", r.step.size, r.step.messages,
                 ms(h.max()), ms(h.min()), h.mean() / 1e6, ms(h.percentile(50)), ms(h.percentile(99)),
                 o.group == 2 ? fmt::format(" {:.3f} |", r.seconds() * 1e3) : "");
    }
  }
  report["results"] = rows;
  if (o.json) tools::print("{}\n", to_json_text(report));
  return status;
}

}  // namespace

Runner add_pingpong_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("pingpong", "Checked-frame ping-pong benchmark: round trips by payload size, bursts and QPS against volley pingpong-server");
  auto o = std::make_shared<PingPongOptions>();
  add_connect_flags(*cmd, o->address, o->port);
  add_unix_connect_flags(*cmd, o->address, o->shm);
  cmd->add_option("-g,--group", o->group,
                  "1: one message at a time per payload size; 2: bursts per payload size; 3: several clients bursting")
      ->check(CLI::Range(1, 3))
      ->capture_default_str();
  cmd->add_option("--sizes", o->sizes, "Payload sizes, comma-separated (groups 1 and 2)")
      ->option_text("BYTES,...")
      ->delimiter(',')
      ->check(CLI::Range(std::size_t{0}, std::size_t{0xFFFFFF - 5}))
      ->default_str(fmt::format("{}", fmt::join(o->sizes, ",")));
  cmd->add_option("-n,--count", o->count, "Group 1: round trips per size; group 2: messages per burst")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000000}))
      ->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed messages first (per size, per client)")->capture_default_str();
  cmd->add_option("--max-bytes", o->max_bytes, "Caps messages x size of one step (large payloads get fewer messages)")
      ->type_name("BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("-c,--clients", o->clients, "Group 3: clients")->check(CLI::Range(1, 10000))->capture_default_str();
  cmd->add_option("-m,--messages", o->messages, "Group 3: messages per client, all sent at once")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000000}))
      ->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Client loops; clients are spread over them")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_flag("--busy-poll", o->busy_poll, "Client loops spin instead of sleeping in the kernel");
  cmd->add_flag("--json", o->json, "Print the results as JSON on stdout");
  cmd->add_flag("!--no-progress", o->progress, "No progress line per payload size on stderr");
  add_session_flags(*cmd, o->session);
  add_tls_client_flags(*cmd, o->tls);
  add_websocket_flags(*cmd, o->ws);
  return [o] {
    if (o->session.framing != "checked") {
      spdlog::error("volley pingpong sends arbitrary payloads: it needs --framing checked");
      return 2;
    }
    for (const std::size_t size : o->sizes) {
      if (size > o->session.max_payload) {
        spdlog::error("--sizes {} is over --max-payload {}", size, o->session.max_payload);
        return 2;
      }
    }
    return run_pingpong(*o);
  };
}

}  // namespace volley::tools
