// `volley arq-bench`: the ARQ delay scenarios (arq_scenarios.hpp) end to end in
// real time. An ARQ run is a sender channel -> volley netem relay (both
// directions impaired, as tc-netem on the loopback device was) -> receiver
// channel, each on its own thread, a message every interval; delay = delivery
// time - input time, or the round trip where the scenario echoes. SCTP runs are
// arq-send and arq-recv processes through the same relay (libusrsctp keeps one
// stack per process); TCP runs cross two network namespaces joined by
// `volley netem tun` (root only). Runs of a scenario go concurrently. Writes
// per-message CSV and summary.json; bench/plot_arq.py draws the plots.
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <fmt/core.h>

#include <volley/arq/udp_channel.hpp>
#include <volley/netem/udp_relay.hpp>

#include "arq_commands.hpp"
#include "output.hpp"
#include "duration_flag.hpp"
#include "arq_report.hpp"
#include "child_processes.hpp"
#include "commands.hpp"
#include "json_output.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;
using namespace std::chrono_literals;

struct Run {
  const ArqScenario* scenario;
  ArqVariant variant;
  std::uint64_t seed;
  std::string name;
  ArqRunResult result{};
};

std::vector<DeliveryRecord> read_csv(const std::string& path) {
  std::vector<DeliveryRecord> records;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    DeliveryRecord r{};
    if (std::sscanf(line.c_str(), "%lu,%ld,%ld", &r.seq, &r.input_ns, &r.delivered_ns) == 3) records.push_back(r);
  }
  return records;
}

// A tool's --json report: its last line that is a JSON object (arq-recv prints its listening line first).
boost::json::object read_report(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line.front() == '{') last = line;
  boost::system::error_code ec;
  auto v = boost::json::parse(last, ec);
  return !ec && v.is_object() ? v.as_object() : boost::json::object{};
}

std::uint64_t number_at(const boost::json::object& o, const char* section, const char* key) {
  const auto* s = o.if_contains(section);
  const auto* v = s && s->is_object() ? s->as_object().if_contains(key) : nullptr;
  return v && v->is_uint64() ? v->as_uint64() : v && v->is_int64() ? static_cast<std::uint64_t>(v->as_int64()) : 0;
}

std::size_t message_size(const Run& run, const ArqOptions& o) { return run.scenario->size ? run.scenario->size : o.size; }

// Flags arq-send and arq-recv share for one run.
std::vector<std::string> tool_args(const Run& run, const ArqOptions& o, const char* protocol) {
  std::vector<std::string> args{"--protocol", protocol, "--size", std::to_string(message_size(run, o)), "--json"};
  if (run.scenario->echo) args.push_back("--echo");
  return args;
}

void execute_arq(Run& run, const ArqOptions& o) {
  ArqRunResult& r = run.result;
  std::string parse_error;
  const auto impairment = netem::parse_impairment(run.scenario->netem, parse_error);
  asio::io_context relay_loop(1), recv_loop(1), send_loop(1);
  ArqConfigs c = make_configs(o);
  c.sender.scheme = c.receiver.scheme = run.variant.scheme;
  c.fec = run.variant.fec;
  const std::size_t size = message_size(run, o);
  const bool echo = run.scenario->echo;

  std::unique_ptr<arq::ArqChannel> receiver;
  receiver = std::make_unique<arq::ArqChannel>(
      recv_loop, udp::socket(recv_loop, udp::endpoint(asio::ip::address_v4::loopback(), 0)), std::nullopt, c.sender,
      c.receiver,
      [&](std::span<const std::byte> m) {
        if (!echo) {
          const Stamp s = read_stamp(m);
          r.records.push_back({s.seq, s.input_ns, arq::ArqChannel::now().count()});
        } else if (!receiver->send(m)) {
          r.error = "the echoing end refused a message";
        }
      },
      c.fec);
  netem::UdpRelay relay(relay_loop, udp::endpoint(asio::ip::address_v4::loopback(), 0), receiver->local_endpoint(),
                        *impairment, *impairment, run.seed);
  asio::steady_timer pacer(send_loop), deadline(send_loop);
  std::uint64_t next = 0;
  bool closing = false;
  std::unique_ptr<arq::ArqChannel> sender;
  const auto finish = [&] {
    if (closing) return;
    closing = true;
    sender->close([&](const std::error_code& e) {
      if (r.error.empty() && e) r.error = e.message();
      deadline.cancel();
      sender->stop();
    });
  };
  sender = std::make_unique<arq::ArqChannel>(
      send_loop, udp::socket(send_loop, udp::endpoint(asio::ip::address_v4::loopback(), 0)), relay.local_endpoint(),
      c.sender, c.receiver,
      [&](std::span<const std::byte> m) {
        if (!echo) return;
        const Stamp s = read_stamp(m);
        r.records.push_back({s.seq, s.input_ns, arq::ArqChannel::now().count()});
        if (r.records.size() == run.scenario->count) finish();
      },
      c.fec);

  // The receiver answers until the sender is done: an ack of the end of stream
  // lost in a burst must be answered again, not taken for a dead peer.
  receiver->start();
  relay.start();

  const auto interval = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::milli>(run.scenario->interval_ms));
  const auto start = std::chrono::steady_clock::now();
  std::function<void()> tick = [&] {
    if (next == run.scenario->count) {
      if (!echo) finish();
      return;
    }
    const auto m = stamped_message(next, arq::ArqChannel::now().count(), size);
    if (!sender->send(m)) r.error = "sender refused a message: " + sender->sender().error().message();
    r.payload_bytes += m.size() * (echo ? 2 : 1);
    ++next;
    pacer.expires_at(start + interval * static_cast<std::int64_t>(next));
    pacer.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) tick();
    });
  };
  // A run that cannot finish (a dead peer aside) is stopped and reported.
  deadline.expires_after(600s);
  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (ec) return;
    r.error = "did not finish within 600 s";
    pacer.cancel();
    sender->stop();
  });
  sender->start();
  tick();

  std::thread relay_thread([&] { relay_loop.run(); });
  std::thread recv_thread([&] { recv_loop.run(); });
  send_loop.run();
  r.seconds = seconds_since(start);
  // The sender is done (its end of stream acknowledged, or given up): stop the rest.
  asio::post(recv_loop, [&] { receiver->stop(); });
  recv_thread.join();
  asio::post(relay_loop, [&] { relay.stop(); });
  relay_thread.join();
  r.sender = sender->sender().stats();
  r.receiver = receiver->receiver().stats();
  if (const auto* f = sender->endpoint().fec_encoder()) r.fec = f->stats();
  r.fec_decoder = receiver->endpoint().fec_decoder().stats();
  for (const auto* ch : {sender.get(), receiver.get()}) {
    r.wire_bytes += ch->endpoint().bytes_sent();
    r.data_bytes += ch->sender().stats().bytes_on_wire;
    if (const auto* f = ch->endpoint().fec_encoder()) r.data_bytes += f->stats().repair_bytes;
  }
  r.up = relay.core().up().counters();
  r.down = relay.core().down().counters();
}

// arq-recv and arq-send as processes; `wrap` places each in its network
// (namespaces for TCP), `to` is where the sender sends given the receiver's port.
void execute_processes(Run& run, const ArqOptions& o, const std::string& out_dir, const char* protocol,
                       const std::function<std::vector<std::string>(std::vector<std::string>, bool)>& wrap,
                       const std::string& listen_address, const std::function<std::string(int)>& to) {
  ArqRunResult& r = run.result;
  const std::string base = out_dir + "/" + run.name;
  const std::string csv = base + ".csv";
  std::filesystem::remove(base + ".port");
  const std::size_t colon = listen_address.rfind(':');
  std::vector<std::string> recv_args{self_executable(),         "arq-recv", "--bind", listen_address.substr(0, colon),
                                     "--port",                  listen_address.substr(colon + 1),
                                     "--port-file",             base + ".port"};
  if (!run.scenario->echo) recv_args.insert(recv_args.end(), {"--csv", csv});
  for (auto& a : tool_args(run, o, protocol)) recv_args.push_back(a);
  const auto start = std::chrono::steady_clock::now();
  Child recv(wrap(recv_args, false), base + ".recv.json");
  const std::string port = wait_for_file(base + ".port", recv, 10s);
  if (port.empty()) {
    r.error = "arq-recv did not start (see " + run.name + ".recv.json.err)";
    return;
  }
  const std::string receiver = to(std::stoi(port));
  const std::size_t receiver_colon = receiver.rfind(':');
  std::vector<std::string> send_args{self_executable(),
                                     "arq-send",
                                     "--address",
                                     receiver.substr(0, receiver_colon),
                                     "--port",
                                     receiver.substr(receiver_colon + 1),
                                     "--count",
                                     std::to_string(run.scenario->count),
                                     "--every",
                                     fmt::format("{}ms", run.scenario->interval_ms)};
  if (run.scenario->echo) send_args.insert(send_args.end(), {"--csv", csv});
  for (auto& a : tool_args(run, o, protocol)) send_args.push_back(a);
  Child send(wrap(send_args, true), base + ".send.json");
  const auto sent = send.wait_for(660s);
  const auto received = recv.wait_for(30s);
  r.seconds = seconds_since(start);
  const auto send_report = read_report(base + ".send.json");
  const auto recv_report = read_report(base + ".recv.json");
  if (!sent || *sent != 0) {
    const auto* e = send_report.if_contains("error");
    r.error = e && e->is_string() && !e->as_string().empty() ? std::string(e->as_string())
                                                              : "arq-send failed (see " + run.name + ".send.json.err)";
  } else if (!received || *received != 0) {
    r.error = "arq-recv failed (see " + run.name + ".recv.json.err)";
  }
  r.records = read_csv(csv);
  r.payload_bytes = run.scenario->count * message_size(run, o) * (run.scenario->echo ? 2 : 1);
  const std::uint64_t sent_bytes = number_at(send_report, "sctp", "bytes_sent");
  const std::uint64_t answered_bytes = number_at(recv_report, "sctp", "bytes_sent");
  r.wire_bytes = sent_bytes + answered_bytes;
  r.data_bytes = run.scenario->echo ? r.wire_bytes : sent_bytes;  // SCTP bundles its SACKs with data
  r.sender.retransmissions = number_at(send_report, "sctp", "retransmitted_chunks");
}

void execute_sctp(Run& run, const ArqOptions& o, const std::string& out_dir) {
  std::string parse_error;
  const auto impairment = netem::parse_impairment(run.scenario->netem, parse_error);
  asio::io_context relay_loop(1);
  std::unique_ptr<netem::UdpRelay> relay;
  std::thread relay_thread;
  const auto to = [&](int recv_port) {
    relay = std::make_unique<netem::UdpRelay>(relay_loop, udp::endpoint(asio::ip::address_v4::loopback(), 0),
                                              udp::endpoint(asio::ip::address_v4::loopback(),
                                                            static_cast<std::uint16_t>(recv_port)),
                                              *impairment, *impairment, run.seed);
    relay->start();
    relay_thread = std::thread([&] { relay_loop.run(); });
    return fmt::format("127.0.0.1:{}", relay->local_endpoint().port());
  };
  execute_processes(run, o, out_dir, "sctp", [](std::vector<std::string> a, bool) { return a; }, "127.0.0.1:0", to);
  if (relay) {
    asio::post(relay_loop, [&] { relay->stop(); });
    relay_thread.join();
    run.result.up = relay->core().up().counters();
    run.result.down = relay->core().down().counters();
  }
}

void execute_tcp(Run& run, const ArqOptions& o, const std::string& out_dir) {
  try {
    const NamespaceLink link(fmt::format("vab{}-{}", ::getpid(), run.name), run.scenario->netem, run.seed, out_dir);
    execute_processes(
        run, o, out_dir, "tcp",
        [&](std::vector<std::string> a, bool sender) { return sender ? link.in_a(std::move(a)) : link.in_b(std::move(a)); },
        fmt::format("{}:9500", NamespaceLink::kAddressB),
        [](int port) { return fmt::format("{}:{}", NamespaceLink::kAddressB, port); });
  } catch (const std::exception& e) {
    run.result.error = e.what();
  }
}

struct BenchOptions {
  std::vector<int> scenarios{1, 2, 3, 4, 5};
  std::vector<std::string> variants;  // empty: each scenario's own, SCTP and TCP added
  int seeds = 0;
  std::string out = "bench/results/arq";
  bool tcp = true;
  bool sctp = true;
};

std::vector<ArqVariant> variants_for(const ArqScenario& scenario, const BenchOptions& b) {
  std::vector<ArqVariant> out;
  std::string error;
  if (!b.variants.empty()) {
    for (const auto& v : b.variants) out.push_back(*parse_arq_variant(v, error));
  } else {
    out = default_arq_variants(scenario);
    if (b.sctp && !scenario.echo) out.push_back(*parse_arq_variant("sctp", error));
    if (b.tcp) out.push_back(*parse_arq_variant("tcp", error));
  }
  return out;
}

int run_bench(const ArqOptions& o, BenchOptions b) {
  std::string error;
  for (const auto& v : b.variants) {
    if (!parse_arq_variant(v, error)) {
      tools::print(stderr, "volley arq-bench: {}\n", error);
      return 2;
    }
  }
  if (const std::string why = NamespaceLink::unavailable_reason(); b.tcp && !why.empty()) {
    tools::print(stderr, "volley arq-bench: no TCP baseline: {} (--no-tcp to silence)\n", why);
    b.tcp = false;
  }
  if (b.tcp) NamespaceLink::remove_stale("vab");
  std::filesystem::create_directories(b.out);
  boost::json::array summary;
  print_arq_table_header();
  std::fflush(stdout);
  int failures = 0;
  for (const int number : b.scenarios) {
    const ArqScenario& scenario = *find_arq_scenario(number);
    std::vector<Run> runs;
    for (const auto& variant : variants_for(scenario, b)) {
      if (variant.kind == ArqVariant::Kind::tcp && !b.tcp) continue;
      const int seeds = b.seeds > 0 ? b.seeds : scenario.seeds;
      for (int seed = 1; seed <= seeds; ++seed)
        runs.push_back({&scenario, variant, static_cast<std::uint64_t>(seed),
                        fmt::format("s{}_{}_seed{}", scenario.number, variant.label(), seed)});
    }
    tools::print(stderr, "scenario {}: {}: {} run(s) at once, about {:.0f} s...\n", scenario.number, scenario.summary,
               runs.size(), static_cast<double>(scenario.count) * scenario.interval_ms / 1000 + 2);
    std::vector<std::thread> threads;
    for (auto& r : runs) {
      threads.emplace_back([&r, &o, &b] {
        if (r.variant.kind == ArqVariant::Kind::arq) execute_arq(r, o);
        else if (r.variant.kind == ArqVariant::Kind::sctp) execute_sctp(r, o, b.out);
        else execute_tcp(r, o, b.out);
        tools::print(stderr, "  {}: {}/{} delivered in {:.1f} s{}\n", r.name, r.result.records.size(), r.scenario->count,
                   r.result.seconds, r.result.error.empty() ? "" : " (" + r.result.error + ")");
      });
    }
    for (auto& t : threads) t.join();
    for (auto& r : runs) {
      const std::string csv = r.name + ".csv";
      if (r.variant.kind == ArqVariant::Kind::arq) write_csv(b.out + "/" + csv, r.result.records);
      print_arq_row(scenario, r.variant, r.seed, r.result);
      summary.push_back(arq_row_json(scenario, r.variant, r.seed, r.result, csv));
      failures += r.result.error.empty() && r.result.records.size() == scenario.count ? 0 : 1;
    }
    std::fflush(stdout);
  }
  std::ofstream(b.out + "/summary.json") << to_json_text(summary) << '\n';
  tools::print("\nper-message CSV and summary.json in {}; plots: /usr/bin/python3 bench/plot_arq.py {}\n", b.out, b.out);
  if (failures > 0) tools::print(stderr, "volley arq-bench: {} run(s) did not deliver everything (see the table)\n", failures);
  return 0;  // undelivered messages are a result to report (SCTP under burst loss), not a tool failure
}

}  // namespace

Runner add_arq_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("arq-bench", "ARQ delay benchmarks end to end in real time over the netem relay: the "
                                              "classic four scenarios and the KCP-style round trips, every scheme "
                                              "with and without FEC beside SCTP and TCP, per-message CSV and statistics");
  auto o = std::make_shared<ArqOptions>();
  auto b = std::make_shared<BenchOptions>();
  cmd->add_option("--scenario", b->scenarios,
                  "Scenarios (1: 50 ms, 200 ms apart, 100 messages; 2: 50+-10 ms normal, 1% loss, 25 ms apart, "
                  "1000; 3: as 2, selective repeat with and without FEC, 5 seeds; 4: as 3 with burst loss "
                  "'state 1% 5%'; 5: KCP-style, 30-62 ms, 5% loss, 20 ms apart, echoed, round trips)")
      ->check(CLI::Range(1, 5));
  cmd->add_option("--variant", b->variants,
                  "Variants instead of each scenario's own: sr, gbn, saw, sr+fec=K:M, sr+fec=adaptive, sctp, tcp")
      ->type_name("VARIANT");
  cmd->add_option("--seeds", b->seeds, "Seeds per variant")
      ->default_str("the scenario's own, 1 to 5")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--window", o->window, "Window in packets")->capture_default_str();
  cmd->add_option("--size", o->size, "Message size for scenarios 1-4")->type_name("BYTES")->capture_default_str();
  add_rto_flag(*cmd, o->fixed_timeout_s);
  cmd->add_option("--fast-retransmit-after", o->fast_retransmit_after,
                  "Selective repeat: resend a hole once this many later packets are acked")
      ->capture_default_str();
  cmd->add_option("--out", b->out, "Folder for the CSV files and summary.json")->type_name("DIR")->capture_default_str();
  cmd->add_flag("!--no-tcp", b->tcp, "Skip the TCP baseline over network namespaces (it needs root)");
  cmd->add_flag("!--no-sctp", b->sctp, "Skip the SCTP runs");
  return [o, b] {
    if (auto e = check_arq_options(*o); !e.empty()) {
      tools::print(stderr, "volley arq-bench: {}\n", e);
      return 2;
    }
    return run_bench(*o, *b);
  };
}

}  // namespace volley::tools
