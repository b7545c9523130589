// `volley netem`: a userspace network impairment emulator, configured with
// tc-netem's own argument syntax per direction.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value_to.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <volley/netem/pcap_writer.hpp>
#include <volley/netem/tun_relay.hpp>
#include <volley/netem/udp_relay.hpp>

#include "commands.hpp"
#include "output.hpp"
#include "duration_flag.hpp"
#include "endpoint.hpp"
#include "json_output.hpp"
#include "metrics_service.hpp"
#include "listening.hpp"
#include "program_design.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;
using netem::LinkCounters;

struct NetemOptions {
  std::string listen;  // ADDRESS:PORT, the old spelling of --bind and --port
  std::string bind = kDefaultBind;
  std::uint16_t port = 9000;
  std::string forward;
  std::string dev_a = "vnetem-a", dev_b = "vnetem-b";
  std::string up, down;
  std::uint64_t seed = 1;
  double duration = 0;
  bool json = false;
  bool progress = true;
  std::string ready_file;  // tun: written once relaying
  std::string port_file;   // udp
  std::string pcap;
  std::size_t max_clients = 1024;
  double client_idle_s = 60;
  MetricsFlags metrics;
  ProgramDesign design;
};

boost::json::object to_json(const LinkCounters& c) {
  return {{"packets_in", c.packets_in}, {"bytes_in", c.bytes_in},     {"packets_out", c.packets_out},
          {"bytes_out", c.bytes_out},   {"lost", c.lost},             {"queue_full", c.queue_full},
          {"link_down", c.link_down},   {"duplicated", c.duplicated}, {"corrupted", c.corrupted},
          {"reordered", c.reordered}};
}

std::string one_line(const LinkCounters& c) {
  return fmt::format("{} in, {} out, {} lost, {} queue-full, {} dup, {} corrupt, {} reordered", c.packets_in,
                     c.packets_out, c.lost, c.queue_full, c.duplicated, c.corrupted, c.reordered);
}

// Both directions' counters in the Prometheus text format, labelled by direction.
std::string metrics_text(const LinkCounters& up, const LinkCounters& down) {
  metrics::PrometheusText out;
  const auto each = [&](const char* name, const char* help, auto field, const char* reason = nullptr) {
    if (reason == nullptr || std::string_view(reason) == "lost") out.family(name, "counter", help);
    for (const auto& [direction, c] : {std::pair{"up", &up}, std::pair{"down", &down}}) {
      if (reason != nullptr) {
        out.sample(name, {{"direction", direction}, {"reason", reason}}, static_cast<double>(c->*field));
      } else {
        out.sample(name, {{"direction", direction}}, static_cast<double>(c->*field));
      }
    }
  };
  each("volley_netem_packets_received_total", "Datagrams the link took in.", &LinkCounters::packets_in);
  each("volley_netem_received_bytes_total", "Bytes the link took in.", &LinkCounters::bytes_in);
  each("volley_netem_packets_sent_total", "Datagrams the link delivered.", &LinkCounters::packets_out);
  each("volley_netem_sent_bytes_total", "Bytes the link delivered.", &LinkCounters::bytes_out);
  each("volley_netem_packets_dropped_total", "Datagrams the link dropped, by reason.", &LinkCounters::lost, "lost");
  each("volley_netem_packets_dropped_total", "", &LinkCounters::queue_full, "queue_full");
  each("volley_netem_packets_dropped_total", "", &LinkCounters::link_down, "link_down");
  each("volley_netem_packets_duplicated_total", "Extra copies the link delivered.", &LinkCounters::duplicated);
  each("volley_netem_packets_corrupted_total", "Datagrams delivered with a flipped bit.", &LinkCounters::corrupted);
  each("volley_netem_packets_reordered_total", "Datagrams sent ahead of their turn.", &LinkCounters::reordered);
  return out.text();
}

// Runs `relay` (UdpRelay or TunRelay, made on `executor`, the server's serial
// executor) until a signal or --duration stops the server. Everything here
// runs on that executor but the metrics endpoint, and a scrape reads the
// counters there.
template <class Relay>
int serve(net::Server& server, const asio::any_io_executor& executor, Relay& relay, const NetemOptions& o,
          const netem::Impairment& up, const netem::Impairment& down, boost::json::object extra) {
  const auto start = Clock::now();
  asio::steady_timer progress(executor), deadline(executor);
  asio::signal_set toggles(executor, SIGUSR1);  // cuts the link and restores it, to test a peer mid-run
  bool stopping = false;
  MetricsService metrics(server, o.metrics, [&executor, &relay](http::MetricsEndpoint::Answer answer) {
    asio::post(executor, [&relay, answer = std::move(answer)] {
      answer(metrics_text(relay.core().up().counters(), relay.core().down().counters()));
    });
  });
  server.on_stop([&] {
    metrics.stop();
    asio::dispatch(executor, [&] {
      stopping = true;
      relay.stop();
      progress.cancel();
      deadline.cancel();
      toggles.cancel();
    });
  });
  std::function<void()> tick = [&] {
    progress.expires_after(std::chrono::seconds(1));
    progress.async_wait([&](const boost::system::error_code& ec) {
      if (ec || stopping) return;
      tools::print(stderr, "[netem {:6.1f}s] up: {} | down: {}\n", seconds_since(start),
                 one_line(relay.core().up().counters()), one_line(relay.core().down().counters()));
      tick();
    });
  };
  if (o.progress) tick();
  if (o.duration > 0) {
    deadline.expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(o.duration)));
    deadline.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) server.stop();
    });
  }
  bool link_down = up.down && down.down;
  std::function<void()> wait_toggle = [&] {
    toggles.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec || stopping) return;
      link_down = !link_down;
      relay.core().set_down(link_down);
      spdlog::warn("netem: link {} (SIGUSR1)", link_down ? "down" : "up");
      wait_toggle();
    });
  };
  wait_toggle();
  std::optional<netem::PcapWriter> capture;
  if (!o.pcap.empty()) {
    try {
      capture.emplace(o.pcap);
    } catch (const std::exception& e) {
      tools::print(stderr, "volley netem: --pcap: {}\n", e.what());
      return 1;
    }
    relay.capture_to(*capture);
  }
  relay.start();
  // UDP mode announces itself as every server program does; signals are handled by now.
  if (extra.contains("port"))
    announce_listening("udp", boost::json::value_to<std::string>(extra.at("address")),
                       static_cast<std::uint16_t>(boost::json::value_to<std::uint64_t>(extra.at("port"))), o.port_file);
  metrics.start();
  if (!o.ready_file.empty()) {
    // UDP mode writes the port it listens on, as --port-file does (the old spelling's behaviour).
    const std::string tmp = o.ready_file + ".tmp";
    std::ofstream(tmp) << (extra.contains("port") ? std::to_string(boost::json::value_to<std::uint64_t>(extra.at("port"))) : "ready") << '\n';
    std::rename(tmp.c_str(), o.ready_file.c_str());
  }
  server.run();

  const auto& u = relay.core().up().counters();
  const auto& d = relay.core().down().counters();
  if (capture) capture->flush();
  if (o.json) {
    extra["tool"] = "volley netem";
    extra["seconds"] = seconds_since(start);
    extra["seed"] = o.seed;
    extra["design"] = net::to_string(o.design.design);
    extra["threads"] = object_threads(o.design);
    extra["up_config"] = up.describe();
    extra["down_config"] = down.describe();
    extra["up"] = to_json(u);
    extra["down"] = to_json(d);
    extra["send_failures"] = relay.errors().send_failures;
    extra["receive_errors"] = relay.errors().receive_errors;
    if (capture)
      extra["pcap"] = {{"file", o.pcap}, {"packets", capture->packets()}, {"write_errors", capture->errors()}};
    if constexpr (requires { relay.kernel_drops(); }) extra["kernel_drops"] = relay.kernel_drops();
    if constexpr (requires { relay.socket_totals(); }) {
      const net::UdpEndpointStats t = relay.socket_totals();
      extra["batches"] = {{"receive_calls", t.receive_calls},
                          {"datagrams_received", t.datagrams_received},
                          {"send_calls", t.send_calls},
                          {"datagrams_sent", t.datagrams_sent}};
    }
    if constexpr (requires { relay.client_counts(); }) {
      const auto& c = relay.client_counts();
      extra["clients"] = {{"opened", c.opened},   {"expired", c.expired}, {"refused", c.refused},
                          {"orphaned", c.orphaned}, {"live", relay.clients()}};
    }
    tools::print("{}\n", to_json_text(extra));
  } else {
    tools::print("volley netem report: {:.3f} s, seed {}\n", seconds_since(start), o.seed);
    tools::print("  up   ({}): {}\n", up.describe(), one_line(u));
    tools::print("  down ({}): {}\n", down.describe(), one_line(d));
    tools::print("  link down drops: up {}, down {}; send failures {}, receive errors {}\n", u.link_down, d.link_down,
               relay.errors().send_failures, relay.errors().receive_errors);
    if (capture)
      tools::print("  capture: {} packets written to {} ({} write errors)\n", capture->packets(), o.pcap, capture->errors());
    if constexpr (requires { relay.client_counts(); }) {
      const auto& c = relay.client_counts();
      tools::print("  clients: {} opened, {} expired when idle, {} refused, {} live; {} packets for forgotten clients dropped\n",
                 c.opened, c.expired, c.refused, relay.clients(), c.orphaned);
      tools::print("  datagrams the kernel dropped (a receive buffer full): {}\n", relay.kernel_drops());
    }
  }
  return 0;
}

bool parse_both(const NetemOptions& o, netem::Impairment& up, netem::Impairment& down) {
  std::string error;
  auto u = netem::parse_impairment(o.up, error);
  if (!u) {
    tools::print(stderr, "volley netem: --up: {}\n", error);
    return false;
  }
  auto d = netem::parse_impairment(o.down, error);
  if (!d) {
    tools::print(stderr, "volley netem: --down: {}\n", error);
    return false;
  }
  up = *u;
  down = *d;
  return true;
}

int run_udp(const NetemOptions& o) {
  netem::Impairment up, down;
  if (!parse_both(o, up, down)) return 2;
  const std::string listen_text = !o.listen.empty() ? o.listen : endpoint_text(o.bind, o.port);
  const auto listen = parse_udp_endpoint(listen_text);
  const auto forward = parse_udp_endpoint(o.forward);
  if (!listen || !forward) {
    tools::print(stderr, "volley netem: '{}': expected a numeric ADDRESS:PORT such as 127.0.0.1:9000\n",
               listen ? o.forward : listen_text);
    return 2;
  }
  if (auto e = check_program_design(o.design); !e.empty()) {
    tools::print(stderr, "volley netem: {}\n", e);
    return 2;
  }
  net::Server server(program_server_options(o.design));
  const auto executor = server.make_serial_executor();
  std::unique_ptr<netem::UdpRelay> relay;
  try {
    const netem::RelayLimits limits{
        .max_clients = o.max_clients,
        .client_idle = std::chrono::milliseconds(static_cast<std::int64_t>(o.client_idle_s * 1000))};
    relay = std::make_unique<netem::UdpRelay>(executor, *listen, *forward, up, down, o.seed, limits);
  } catch (const std::exception& e) {
    tools::print(stderr, "volley netem: cannot listen on {}: {}\n", listen_text, e.what());
    return 1;
  }
  const auto local = relay->local_endpoint();
  spdlog::info("netem: relaying udp {}:{} -> {}; up: {}; down: {}; {} thread(s), {}", local.address().to_string(),
               local.port(), o.forward, up.describe(), down.describe(), object_threads(o.design),
               net::to_string(o.design.design));
  return serve(server, executor, *relay, o, up, down,
               {{"mode", "udp"},
                {"listen", fmt::format("{}:{}", local.address().to_string(), local.port())},
                {"address", local.address().to_string()},
                {"port", local.port()},
                {"forward", o.forward}});
}

int run_tun(const NetemOptions& o) {
  netem::Impairment up, down;
  if (!parse_both(o, up, down)) return 2;
  if (auto e = check_program_design(o.design); !e.empty()) {
    tools::print(stderr, "volley netem tun: {}\n", e);
    return 2;
  }
  std::string error;
  const int a = netem::open_tun(o.dev_a, error);
  const int b = a < 0 ? -1 : netem::open_tun(o.dev_b, error);
  if (a < 0 || b < 0) {
    if (a >= 0) ::close(a);
    tools::print(stderr, "volley netem tun: {}\n", error);
    return 1;
  }
  net::Server server(program_server_options(o.design));
  const auto executor = server.make_serial_executor();
  netem::TunRelay relay(executor, a, b, up, down, o.seed);
  spdlog::info("netem: relaying between TUN {} and {}; up: {}; down: {}; {} thread(s), {}", o.dev_a, o.dev_b,
               up.describe(), down.describe(), object_threads(o.design), net::to_string(o.design.design));
  return serve(server, executor, relay, o, up, down, {{"mode", "tun"}, {"dev_a", o.dev_a}, {"dev_b", o.dev_b}});
}

void add_common(CLI::App& cmd, NetemOptions& o) {
  cmd.add_option("--up", o.up, "Impairment towards the forward side / device b, in tc-netem syntax, e.g. "
                               "'delay 50ms 10ms distribution normal loss random 1%'")
      ->type_name("IMPAIRMENT");
  cmd.add_option("--down", o.down, "Impairment of the way back, same syntax")->type_name("IMPAIRMENT");
  cmd.add_option("--seed", o.seed, "Seed of the impairment randomness (same seed, same impairments)")
      ->capture_default_str();
  add_duration_option(cmd, "--duration", o.duration, "How long to run", 0, kMaxRunSeconds, false)
      ->default_str("until SIGINT/SIGTERM");
  cmd.add_flag("--json", o.json, "Print the final counters as JSON on stdout");
  add_metrics_flag(cmd, o.metrics);
  add_program_design_flags(cmd, o.design, "the relay's sockets, timers and link");
  cmd.add_flag("!--no-progress", o.progress, "Do not print counters each second on stderr");
  cmd.add_option("--pcap", o.pcap,
                 "Write a pcapng capture: every packet received (interface 'received') and sent on ('sent'), "
                 "drops, corruptions, duplicates and reorders marked in frame comments")
      ->type_name("FILE");
}

}  // namespace

Runner add_netem_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("netem", "Network impairment emulator: a UDP relay (or, with `tun`, an IP link) "
                                          "that delays, drops, duplicates, corrupts, reorders and rate-limits");
  auto o = std::make_shared<NetemOptions>();
  add_bind_flags(*cmd, o->bind, o->port, "clients send to");
  cmd->add_option("--listen", o->listen)->group("");  // the old spelling: ADDRESS:PORT
  cmd->add_option("--forward", o->forward, "Where the datagrams are relayed to (required)")->option_text("ADDRESS:PORT");
  add_common(*cmd, *o);
  cmd->add_option("--ready-file", o->ready_file)->group("");  // the old spelling of --port-file
  cmd->add_option("--max-clients", o->max_clients,
                  "Clients (source addresses) relayed at once; a new one over it is dropped and counted")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}));
  add_duration_option(*cmd, "--client-idle", o->client_idle_s,
                      "Time without traffic either way after which a client's upstream socket is closed", 0.01, 86400.0);
  cmd->add_option("--port-file", o->port_file,
                  "Once relaying, write the port listened on to this file (atomically: whole or not at all)")
      ->type_name("FILE");
  auto* tun = cmd->add_subcommand("tun", "Relay IP packets between two TUN devices (see scripts/netem-tun.sh); needs root");
  tun->add_option("--dev-a", o->dev_a, "TUN device of side a (its packets go up)")
      ->type_name("DEVICE")
      ->capture_default_str();
  tun->add_option("--dev-b", o->dev_b, "TUN device of side b (its packets come down)")
      ->type_name("DEVICE")
      ->capture_default_str();
  add_common(*tun, *o);
  tun->add_option("--ready-file", o->ready_file, "Once relaying, write \"ready\" to this file")->type_name("FILE");
  return [o, tun]() -> int {
    if (tun->parsed()) return run_tun(*o);
    if (o->forward.empty()) {
      tools::print(stderr, "volley netem: --forward ADDRESS:PORT is required (or use `volley netem tun`)\n");
      return 2;
    }
    return run_udp(*o);
  };
}

}  // namespace volley::tools
