// `volley arq-bench`: the ARQ delay benchmarks over an impaired link, end to end in real time.
// Each run is a sender channel -> volley netem relay (both directions impaired,
// as tc-netem on the loopback device was) -> receiver channel, each on its own
// thread, a message every interval; delay = delivery time - input time. Runs of
// a scenario go concurrently. Writes per-message CSV and summary.json, prints the
// per-message delay statistics (mean, median, stdev, min, max, p99), and draws PNG plots with bench/plot_arq.py.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/array.hpp>
#include <fmt/core.h>

#include <volley/arq/udp_channel.hpp>
#include <volley/netem/udp_relay.hpp>

#include "arq_commands.hpp"
#include "arq_messages.hpp"
#include "commands.hpp"
#include "json_output.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;

struct Scenario {
  int number;
  std::string netem;
  double interval_ms;
  std::uint64_t count;
  std::vector<arq::Scheme> schemes;
  int seeds;  // runs per scheme, seeds 1..n
};

const std::vector<Scenario> kScenarios{
    {1, "delay 50ms", 200, 100, {arq::Scheme::stop_and_wait, arq::Scheme::go_back_n, arq::Scheme::selective_repeat}, 1},
    {2, "delay 50ms 10ms distribution normal loss random 1%", 25, 1000,
     {arq::Scheme::stop_and_wait, arq::Scheme::go_back_n, arq::Scheme::selective_repeat}, 1},
    {3, "delay 50ms 10ms distribution normal loss random 1%", 25, 1000, {arq::Scheme::selective_repeat}, 5},
    {4, "delay 50ms 10ms distribution normal loss state 1% 5%", 25, 1000, {arq::Scheme::selective_repeat}, 3},
};

struct Run {
  const Scenario* scenario;
  std::optional<arq::Scheme> scheme;  // none: the TCP baseline
  std::uint64_t seed;
  std::string name;
  // Results.
  std::vector<DeliveryRecord> records{};
  arq::SenderStats sender{};
  arq::ReceiverStats receiver{};
  netem::LinkCounters up{}, down{};
  std::uint64_t payload_bytes = 0;
  std::string error{};
  double seconds = 0;
};

std::string scheme_label(std::optional<arq::Scheme> s) {
  if (!s) return "tcp";
  return *s == arq::Scheme::selective_repeat ? "sr" : *s == arq::Scheme::go_back_n ? "gbn" : "saw";
}

std::string scheme_name(std::optional<arq::Scheme> s) { return s ? arq::to_string(*s) : "tcp (over TUN)"; }

bool tcp_baseline_possible() {
  struct stat st {};
  return ::geteuid() == 0 && ::stat("/dev/net/tun", &st) == 0;
}

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

// The TCP baseline runs as processes in two network namespaces (bench/arq_tcp_baseline.sh).
void execute_tcp(Run& run, const ArqOptions& o, const std::string& out_dir) {
  const std::string csv = out_dir + "/" + run.name + ".csv";
  const std::string bin = std::filesystem::canonical("/proc/self/exe").parent_path().string();
  const std::string command = fmt::format("'{}/bench/arq_tcp_baseline.sh' '{}' '{}' {} {} {} {} '{}'", VOLLEY_SOURCE_DIR,
                                          bin, run.scenario->netem, run.scenario->count, run.scenario->interval_ms,
                                          o.size, run.seed, csv);
  const auto start = std::chrono::steady_clock::now();
  if (std::system(command.c_str()) != 0) run.error = "the TCP baseline failed (see bench/arq_tcp_baseline.sh)";
  run.seconds = seconds_since(start);
  run.records = read_csv(csv);
  run.payload_bytes = run.records.size() * o.size;
}

void execute(Run& run, const ArqOptions& o, const std::string& out_dir) {
  if (!run.scheme) return execute_tcp(run, o, out_dir);
  std::string parse_error;
  const auto impairment = netem::parse_impairment(run.scenario->netem, parse_error);
  asio::io_context relay_loop(1), recv_loop(1), send_loop(1);
  ArqOptions scheme_options = o;
  scheme_options.protocol = scheme_label(run.scheme);  // a UDP scheme here
  const ArqConfigs c = make_configs(scheme_options);

  arq::ArqChannel receiver(recv_loop, udp::socket(recv_loop, udp::endpoint(asio::ip::address_v4::loopback(), 0)),
                           std::nullopt, c.sender, c.receiver, [&](std::span<const std::byte> m) {
                             const Stamp s = read_stamp(m);
                             run.records.push_back({s.seq, s.input_ns, arq::ArqChannel::now().count()});
                           });
  netem::UdpRelay relay(relay_loop, udp::endpoint(asio::ip::address_v4::loopback(), 0), receiver.local_endpoint(),
                        *impairment, *impairment, run.seed);
  arq::ArqChannel sender(send_loop, udp::socket(send_loop, udp::endpoint(asio::ip::address_v4::loopback(), 0)),
                         relay.local_endpoint(), c.sender, c.receiver, [](std::span<const std::byte>) {});

  // The receiver lingers after the end of stream so the sender's last acks get through.
  receiver.start();
  receiver.on_peer_finished([&](const std::string&) {
    auto linger = std::make_shared<asio::steady_timer>(recv_loop, std::chrono::seconds(1));
    linger->async_wait([&, linger](const boost::system::error_code&) { receiver.stop(); });
  });
  relay.start();

  const auto interval = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double, std::milli>(run.scenario->interval_ms));
  const auto start = std::chrono::steady_clock::now();
  asio::steady_timer pacer(send_loop), deadline(send_loop);
  std::uint64_t next = 0;
  std::function<void()> tick = [&] {
    if (next == run.scenario->count) {
      sender.close([&](const std::string& e) {
        run.error = e;
        deadline.cancel();
        sender.stop();
      });
      return;
    }
    const auto m = stamped_message(next, arq::ArqChannel::now().count(), o.size);
    if (!sender.send(m)) run.error = "sender refused a message: " + sender.sender().error();
    run.payload_bytes += m.size();
    ++next;
    pacer.expires_at(start + interval * static_cast<std::int64_t>(next));
    pacer.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) tick();
    });
  };
  // A run that cannot finish (a dead peer aside) is stopped and reported.
  deadline.expires_after(std::chrono::seconds(600));
  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (ec) return;
    run.error = "did not finish within 600 s";
    pacer.cancel();
    sender.stop();
  });
  sender.start();
  tick();

  std::thread relay_thread([&] { relay_loop.run(); });
  std::thread recv_thread([&] { recv_loop.run(); });
  send_loop.run();
  run.seconds = seconds_since(start);
  // The sender is done; give the receiver its linger, then stop the rest.
  for (int i = 0; i < 300 && !recv_loop.stopped(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  asio::post(recv_loop, [&] { receiver.stop(); });
  recv_thread.join();
  asio::post(relay_loop, [&] { relay.stop(); });
  relay_thread.join();
  run.sender = sender.sender().stats();
  run.receiver = receiver.receiver().stats();
  run.up = relay.core().up().counters();
  run.down = relay.core().down().counters();
}

int run_bench(const ArqOptions& o, const std::vector<int>& scenarios, const std::string& out_dir,
              const std::string& plot_script, bool tcp) {
  if (tcp && !tcp_baseline_possible()) {
    fmt::print(stderr, "volley arq-bench: no TCP baseline: it needs root and /dev/net/tun (--no-tcp to silence)\n");
    tcp = false;
  }
  std::filesystem::create_directories(out_dir);
  boost::json::array summary;
  fmt::print("| scenario | scheme | seed | delivered | mean ms | median ms | stdev ms | min ms | p99 ms | max ms | "
             "retransmissions | data bytes per payload byte | all bytes per payload byte |\n");
  fmt::print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Scenario& scenario : kScenarios) {
    if (std::find(scenarios.begin(), scenarios.end(), scenario.number) == scenarios.end()) continue;
    std::vector<Run> runs;
    for (const arq::Scheme scheme : scenario.schemes)
      for (int seed = 1; seed <= scenario.seeds; ++seed)
        runs.push_back({&scenario, scheme, static_cast<std::uint64_t>(seed),
                        fmt::format("s{}_{}_seed{}", scenario.number, scheme_label(scheme), seed)});
    if (tcp)
      runs.push_back({&scenario, std::nullopt, 1, fmt::format("s{}_tcp_seed1", scenario.number)});
    fmt::print(stderr, "scenario {}: {} ({} x {} ms), {} run(s) at once...\n", scenario.number, scenario.netem,
               scenario.count, scenario.interval_ms, runs.size());
    std::vector<std::thread> threads;
    for (auto& r : runs) threads.emplace_back([&r, &o, &out_dir] { execute(r, o, out_dir); });
    for (auto& t : threads) t.join();
    for (auto& r : runs) {
      if (r.scheme) write_csv(out_dir + "/" + r.name + ".csv", r.records);
      const DelayStats s = delay_stats(r.records);
      const double payload = static_cast<double>(std::max<std::uint64_t>(r.payload_bytes, 1));
      const double data_ratio = static_cast<double>(r.sender.bytes_on_wire) / payload;
      const double all_ratio = static_cast<double>(r.sender.bytes_on_wire + r.receiver.bytes_on_wire) / payload;
      // TCP keeps its retransmissions and bytes to itself: not shown rather than shown as zero.
      const std::string retx = r.scheme ? std::to_string(r.sender.retransmissions) : "n/a";
      const std::string data_bytes = r.scheme ? fmt::format("{:.3f}", data_ratio) : "n/a";
      const std::string all_bytes = r.scheme ? fmt::format("{:.3f}", all_ratio) : "n/a";
      fmt::print("| {} | {} | {} | {}/{} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} | {} | {} |{}\n",
                 scenario.number, scheme_name(r.scheme), r.seed, s.count, scenario.count, s.mean, s.median, s.stdev,
                 s.min, s.p99, s.max, retx, data_bytes, all_bytes, r.error.empty() ? "" : " error: " + r.error);
      summary.push_back(boost::json::object{
          {"name", r.name},
          {"scenario", scenario.number},
          {"netem", scenario.netem},
          {"interval_ms", scenario.interval_ms},
          {"count", scenario.count},
          {"scheme", scheme_name(r.scheme)},
          {"seed", r.seed},
          {"delay", to_json(s)},
          {"packets_sent", r.sender.packets_sent},
          {"retransmissions", r.sender.retransmissions},
          {"timeouts", r.sender.timeouts},
          {"fast_retransmits", r.sender.fast_retransmits},
          {"data_bytes_per_payload_byte", data_ratio},
          {"all_bytes_per_payload_byte", all_ratio},
          {"extra_data_bytes", static_cast<double>(r.sender.retransmissions) /
                                   static_cast<double>(std::max<std::uint64_t>(r.sender.packets_sent, 1))},
          {"lost_up", r.up.lost},
          {"lost_down", r.down.lost},
          {"seconds", r.seconds},
          {"error", r.error},
          {"csv", r.name + ".csv"}});
    }
  }
  std::ofstream(out_dir + "/summary.json") << to_json_text(summary) << '\n';
  fmt::print("\nper-message CSV and summary.json in {}\n", out_dir);
  std::fflush(stdout);  // before the plotting process writes to the same stdout
  if (!plot_script.empty()) {
    const std::string command = "/usr/bin/python3 '" + plot_script + "' '" + out_dir + "'";
    if (std::system(command.c_str()) != 0)
      fmt::print(stderr, "volley arq-bench: plotting failed (needs /usr/bin/python3 with matplotlib: "
                         "apt-get install python3-matplotlib)\n");
  }
  return 0;
}

}  // namespace

Runner add_arq_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("arq-bench", "ARQ delay benchmarks (four impaired-link scenarios) end to end over the netem relay, "
                                              "with per-message CSV, statistics and PNG plots");
  auto o = std::make_shared<ArqOptions>();
  auto scenarios = std::make_shared<std::vector<int>>(std::vector<int>{1, 2, 3, 4});
  auto out = std::make_shared<std::string>("bench/results/arq");
  auto plot = std::make_shared<std::string>(std::string(VOLLEY_SOURCE_DIR) + "/bench/plot_arq.py");
  cmd->add_option("--scenario", *scenarios, "Scenarios to run (1: 50 ms, 200 ms apart, 100 messages; 2: 50+-10 ms "
                                            "normal, 1% loss, 25 ms apart, 1000; 3: as 2, selective repeat, 5 seeds; "
                                            "4: as 3 with burst loss 'state 1% 5%')")
      ->check(CLI::Range(1, 4));
  cmd->add_option("--window", o->window, "Window in packets")->capture_default_str();
  cmd->add_option("--size", o->size, "Message size in bytes")->capture_default_str();
  cmd->add_option("--timeout", o->fixed_timeout_ms, "Fixed retransmission timeout in ms (default: RFC 6298)");
  cmd->add_option("--fast-retransmit-after", o->fast_retransmit_after,
                  "Selective repeat: resend a hole once this many later packets are acked")
      ->capture_default_str();
  cmd->add_option("--out", *out, "Folder for the CSV files, summary.json and plots")->capture_default_str();
  cmd->add_option("--plot-script", *plot, "Plotting script ('' to skip plots)")->capture_default_str();
  auto no_tcp = std::make_shared<bool>(false);
  cmd->add_flag("--no-tcp", *no_tcp, "Skip the TCP baseline over the netem TUN link (it needs root)");
  return [o, scenarios, out, plot, no_tcp] { return run_bench(*o, *scenarios, *out, *plot, !*no_tcp); };
}

}  // namespace volley::tools
