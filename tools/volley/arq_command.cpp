// `volley arq-send` and `volley arq-recv`: one message every interval over an
// ARQ channel (or over SCTP or TCP, the reliable controls; arq_transport.hpp),
// and per-message delay = delivery time - input time at the receiver, or the
// round trip at the sender with --echo.
#include <csignal>
#include <fstream>

#include <array>

#include <boost/asio/post.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/core.h>

#include <volley/arq/udp_channel.hpp>

#include "arq_commands.hpp"
#include "output.hpp"
#include "duration_flag.hpp"
#include "arq_transport.hpp"
#include "arq_messages.hpp"
#include "delay_recorder.hpp"
#include "commands.hpp"
#include "json_output.hpp"
#include "listening.hpp"
#include "metrics_service.hpp"
#include "program_design.hpp"

namespace volley::tools {

namespace asio = boost::asio;

std::optional<arq::Scheme> parse_scheme(const std::string& name) {
  if (name == "sr" || name == "selective-repeat") return arq::Scheme::selective_repeat;
  if (name == "gbn" || name == "go-back-n") return arq::Scheme::go_back_n;
  if (name == "saw" || name == "snw" || name == "stop-and-wait") return arq::Scheme::stop_and_wait;
  return std::nullopt;
}

ArqConfigs make_configs(const ArqOptions& o) {
  ArqConfigs c;
  c.sender.scheme = c.receiver.scheme = *parse_scheme(o.protocol);
  c.sender.window = c.receiver.window = o.window;
  c.sender.max_payload = kMaxMessageSize;  // one datagram within a 1500-byte MTU
  c.sender.fast_retransmit_after = o.fast_retransmit_after;
  if (o.fixed_timeout_s > 0)
    c.sender.rto.fixed = std::chrono::duration_cast<arq::Nanos>(std::chrono::duration<double>(o.fixed_timeout_s));
  if (!o.fec.empty()) {
    arq::FecConfig fec;
    std::string ignored;  // checked by check_arq_options
    if (arq::parse_fec(o.fec, fec, ignored)) c.fec = fec;
  }
  return c;
}

void add_rto_flag(CLI::App& cmd, double& fixed_timeout_s) {
  add_duration_option(cmd, "--rto", fixed_timeout_s, "A fixed retransmission timeout", 0.0, 600.0, false)
      ->default_str("the RFC 6298 estimate");
  add_old_duration_alias(cmd, "--timeout", fixed_timeout_s, 1e-3, 0.0, 600.0);
}

std::string check_arq_options(const ArqOptions& o) {
  const bool arq = parse_scheme(o.protocol).has_value();
  if (o.protocol != "tcp" && o.protocol != "sctp" && !arq) return "--protocol must be sr, gbn, saw, tcp or sctp";
  if (o.size < kArqStampSize || o.size > kMaxMessageSize)
    return fmt::format("--size must be {} to {} bytes", kArqStampSize, kMaxMessageSize);
  if (!o.fec.empty()) {
    if (!arq) return "--fec goes with the ARQ schemes (sr, gbn, saw), not " + o.protocol;
    arq::FecConfig fec;
    std::string error;
    if (!arq::parse_fec(o.fec, fec, error)) return "--fec: " + error;
  }
  return {};
}

namespace {

void print_delay_line(const char* tool, const ArqOptions& o, const char* what, const DelayStats& s, const std::string& error) {
  tools::print("{} ({}): {} messages; {} mean {:.3f} ms, median {:.3f} ms, stdev {:.3f} ms, min {:.3f} ms, "
             "p99 {:.3f} ms, max {:.3f} ms{}\n",
             tool, o.protocol, s.count, what, s.mean, s.median, s.stdev, s.min, s.p99, s.max,
             error.empty() ? "" : "; error: " + error);
}

// The receiver's counters and its one-way delay histogram in the Prometheus text format.
std::string recv_metrics_text(const DelayRecorder& delays, std::uint64_t damaged, std::uint64_t heard) {
  metrics::PrometheusText out;
  out.family("volley_arq_messages_delivered_total", "counter", "Messages delivered in order, intact.");
  out.sample("volley_arq_messages_delivered_total", static_cast<double>(delays.count()));
  out.family("volley_arq_damaged_messages_total", "counter", "Messages delivered whose bytes were not the sender's.");
  out.sample("volley_arq_damaged_messages_total", static_cast<double>(damaged));
  out.family("volley_arq_datagrams_received_total", "counter", "Datagrams (or TCP reads) heard from the peer.");
  out.sample("volley_arq_datagrams_received_total", static_cast<double>(heard));
  // One-way delay, from the sender's input stamp to delivery (same host clock).
  out.family("volley_arq_delivery_delay_seconds", "histogram", "One-way delay from the sender's input to delivery.");
  out.histogram("volley_arq_delivery_delay_seconds", DelayRecorder::kBounds, delays.cumulative(), delays.sum_seconds(),
                delays.count());
  return out.text();
}

int run_recv(const ArqOptions& o, const MetricsFlags& metrics_flags, const ProgramDesign& design) {
  std::string problem = check_arq_options(o);
  if (problem.empty()) problem = check_program_design(design);
  if (!problem.empty()) {
    tools::print(stderr, "volley arq-recv: {}\n", problem);
    return 2;
  }
  const auto listen = parse_udp_endpoint(o.address);
  if (!listen) {
    tools::print(stderr, "volley arq-recv: '{}' is not a numeric address and port\n", o.address);
    return 2;
  }
  // Everything here runs on the server's serial executor but the metrics endpoint.
  net::Server server(program_server_options(design));
  const auto executor = server.make_serial_executor();
  DelayRecorder delays;  // fixed space: a receiver may run for days
  std::ofstream csv;     // --csv: each delivery written as it comes
  if (!o.csv.empty() && !o.echo) {
    csv.open(o.csv);
    if (!csv) {
      tools::print(stderr, "volley arq-recv: cannot write --csv {}\n", o.csv);
      return 1;
    }
    csv << kDeliveryCsvHeader;
  }
  std::uint64_t damaged = 0;  // a message whose filler is not what the sender wrote
  std::string error;
  std::unique_ptr<MessageTransport> transport;
  auto record = [&](std::span<const std::byte> m) {
    if (m.size() < kArqStampSize || !intact(m)) {
      damaged += 1;
      return;
    }
    const Stamp s = read_stamp(m);
    const DeliveryRecord r{s.seq, s.input_ns, arq::ArqChannel::now().count()};
    delays.record(r);
    if (csv.is_open()) write_csv_row(csv, r);
    if (o.echo && !transport->channel().send(m) && error.empty()) error = "echo refused: " + transport->refusal();
  };
  try {
    transport = listen_transport(executor, o, *listen, record);
  } catch (const std::exception& e) {
    tools::print(stderr, "volley arq-recv: cannot listen on {}: {}\n", o.address, e.what());
    return 1;
  }
  // After the peer's end: linger until it was quiet for kQuiet, at most kLingerMax.
  constexpr auto kLingerStep = std::chrono::milliseconds(100);
  constexpr auto kQuiet = std::chrono::milliseconds(500);
  constexpr auto kLingerMax = std::chrono::seconds(10);
  // A scrape reads the counters on the channel's executor.
  MetricsService metrics(server, metrics_flags, [&](http::MetricsEndpoint::Answer answer) {
    asio::post(executor, [&, answer = std::move(answer)] {
      answer(recv_metrics_text(delays, damaged, transport ? transport->datagrams_heard() : 0));
    });
  });
  asio::steady_timer linger(executor);
  std::uint64_t heard = 0;
  std::chrono::steady_clock::time_point quiet_since, linger_from;
  std::function<void(const boost::system::error_code&)> linger_step = [&](const boost::system::error_code& ec) {
    if (ec) return;
    const auto now = std::chrono::steady_clock::now();
    if (const auto h = transport->datagrams_heard(); h != heard) {
      heard = h;
      quiet_since = now;
    }
    if (now - quiet_since >= kQuiet || now - linger_from >= kLingerMax) return server.stop();
    linger.expires_after(kLingerStep);
    linger.async_wait(linger_step);
  };
  transport->channel().on_peer_finished([&](const std::error_code& e) {
    if (e && error.empty()) error = e.message();
    // The sender ends its stream only after every echo came back, so nothing
    // of ours is in flight. Keep answering while the peer still sends: our
    // acknowledgement of its end may be lost, and it repeats its end at its
    // retransmission timeout (which doubles) until one arrives.
    heard = transport->datagrams_heard();
    quiet_since = linger_from = std::chrono::steady_clock::now();
    linger.expires_after(kLingerStep);
    linger.async_wait(linger_step);
  });
  // The end of the linger, or a signal (SIGINT, SIGTERM, SIGHUP).
  server.on_stop([&] {
    metrics.stop();
    asio::dispatch(executor, [&] {
      linger.cancel();
      transport->channel().stop();
    });
  });
  // Announced once the signal wait is in place, as every server program does.
  const auto local = transport->local_endpoint();
  announce_listening(transport->protocol(), local.address().to_string(), local.port(), o.port_file);
  metrics.start();
  if (!o.ready_file.empty()) std::ofstream(o.ready_file) << "ready\n";
  server.run();
  if (server.stop_signal() != 0) error = "interrupted";

  csv.close();
  // A run that delivered nothing is never a success: its peer vanished before
  // sending, or the sender it heard from was not the real one.
  if (error.empty() && delays.count() == 0) error = "no message delivered";
  const DelayStats s = delays.stats();
  boost::json::object report{{"tool", "volley arq-recv"},
                             {"protocol", o.protocol},
                             {"echo", o.echo},
                             {"design", net::to_string(design.design)},
                             {"threads", object_threads(design)},
                             {"delay", to_json(s)},
                             {"damaged_messages", damaged},
                             {"error", error}};
  for (auto& [key, value] : transport->report()) report[key] = value;
  if (o.json) {
    tools::print("{}\n", to_json_text(report));
  } else {
    print_delay_line("arq-recv", o, "one-way delay", s, error);
    if (const auto* f = report.if_contains("foreign_datagrams"))
      tools::print("  foreign datagrams (not from the sender, ignored): {}\n", f->as_uint64());
  }
  return error.empty() ? 0 : 1;
}

int run_send(const ArqOptions& o) {
  if (auto e = check_arq_options(o); !e.empty()) {
    tools::print(stderr, "volley arq-send: {}\n", e);
    return 2;
  }
  const auto to = parse_udp_endpoint(o.address);
  if (!to) {
    tools::print(stderr, "volley arq-send: '{}' is not a numeric address and port\n", o.address);
    return 2;
  }
  asio::io_context loop(1);
  std::string error;
  std::uint64_t next = 0;
  std::uint64_t payload_bytes = 0;
  std::vector<DeliveryRecord> round_trips;  // --echo
  asio::steady_timer pacer(loop), drain(loop);
  std::unique_ptr<MessageTransport> transport;
  bool closing = false, closed = false;
  const auto finish = [&] {
    if (closing) return;
    closing = true;
    transport->channel().close([&](const std::error_code& e) {
      if (e && error.empty()) error = e.message();
      closed = true;
      drain.cancel();
      transport->channel().stop();
    });
  };
  const auto on_echo = [&](std::span<const std::byte> m) {
    if (!o.echo || m.size() < kArqStampSize) return;
    const Stamp s = read_stamp(m);
    round_trips.push_back({s.seq, s.input_ns, arq::ArqChannel::now().count()});
    if (round_trips.size() == o.count) finish();
  };
  const auto interval = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(o.interval_s));
  auto start = std::chrono::steady_clock::now();  // set again once connected: pacing starts at the first message
  std::function<void()> tick = [&] {
    if (next == o.count) {
      if (!o.echo) finish();
      if (closed) return;  // the echoes were all back before this tick
      // Everything must be through within the drain timeout, or it is reported as not delivered.
      drain.expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(o.drain_timeout_s)));
      drain.async_wait([&](const boost::system::error_code& ec) {
        if (ec) return;
        if (error.empty()) error = fmt::format("not finished {} s after the last message", o.drain_timeout_s);
        transport->channel().stop();
      });
      return;
    }
    const auto m = stamped_message(next, arq::ArqChannel::now().count(), o.size);
    if (!transport->channel().send(m)) {
      error = transport->refusal();
      transport->channel().stop();
      return;
    }
    payload_bytes += m.size();
    ++next;
    pacer.expires_at(start + interval * static_cast<std::int64_t>(next));
    pacer.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) tick();
    });
  };
  try {
    transport = connect_transport(loop.get_executor(), o, *to, on_echo);
  } catch (const std::exception& e) {
    tools::print(stderr, "volley arq-send: cannot reach {}: {}\n", o.address, e.what());
    return 1;
  }
  // Pacing starts once the transport is up: SCTP's association setup is not a message's delay.
  transport->channel().on_ready([&](const std::error_code& e) {
    if (e) {
      error = e.message();
      transport->channel().stop();
      return;
    }
    start = std::chrono::steady_clock::now();
    tick();
  });
  loop.run();
  const double seconds = seconds_since(start);
  if (!o.csv.empty() && o.echo) write_csv(o.csv, round_trips);
  boost::json::object report{{"tool", "volley arq-send"}, {"protocol", o.protocol}, {"messages", next},
                             {"payload_bytes", payload_bytes}, {"seconds", seconds}, {"echo", o.echo},
                             {"error", error}};
  if (!o.fec.empty()) report["fec"] = o.fec;
  if (o.echo) report["round_trip"] = to_json(delay_stats(round_trips));
  for (auto& [key, value] : transport->report()) report[key] = value;
  if (o.json) {
    tools::print("{}\n", to_json_text(report));
    return error.empty() ? 0 : 1;
  }
  if (o.echo) print_delay_line("arq-send", o, "round trip", delay_stats(round_trips), error);
  else
    tools::print("arq-send ({}): {} messages in {:.3f} s{}\n", o.protocol, next, seconds,
               error.empty() ? "" : "; error: " + error);
  if (const auto* s = report.if_contains("sender")) {
    const auto& sender = s->as_object();
    tools::print("  {} packets, {} retransmissions ({} timeouts, {} fast); all bytes sent per payload byte {:.3f}\n",
               sender.at("packets_sent").as_uint64(), sender.at("retransmissions").as_uint64(),
               sender.at("timeouts").as_uint64(), sender.at("fast_retransmits").as_uint64(),
               payload_bytes ? static_cast<double>(report.at("bytes_sent").as_uint64()) / static_cast<double>(payload_bytes) : 0.0);
  }
  return error.empty() ? 0 : 1;
}

void add_common(CLI::App& cmd, ArqOptions& o) {
  cmd.add_option("--protocol", o.protocol,
                 "sr (selective repeat), gbn (go-back-N), saw (stop-and-wait), tcp, or sctp (over UDP, in user space)")
      ->option_text("sr|gbn|saw|tcp|sctp")
      ->capture_default_str();
  cmd.add_flag("--echo", o.echo,
               "The receiver sends every message back over the same protocol; the sender reports round trips");
  cmd.add_option("--window", o.window, "Window in packets (sender and receiver)")->capture_default_str()->check(CLI::Range(1, 65535));
  cmd.add_option("--size", o.size, "Message size (16 bytes of it are the sequence and input time)")
      ->type_name("BYTES")
      ->capture_default_str();
  cmd.add_flag("--json", o.json, "Print the report as JSON");
}

}  // namespace

Runner add_arq_commands(CLI::App& app) {
  auto o = std::make_shared<ArqOptions>();
  auto* send = app.add_subcommand("arq-send", "Send a message every interval over an ARQ channel (or TCP)");
  o->host = kDefaultBind;
  add_connect_flags(*send, o->host, o->port);
  send->get_option("--port")->default_str("")->description("Port of the receiver, or of a netem relay (required)");
  send->add_option("--to", o->address)->group("");  // the old spelling: ADDRESS:PORT
  send->add_option("--count", o->count, "Messages to send")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
  add_duration_option(*send, "--every", o->interval_s, "Time between messages", 0.0, 3600.0);
  add_old_duration_alias(*send, "--interval", o->interval_s, 1e-3, 0.0, 3600.0);
  add_rto_flag(*send, o->fixed_timeout_s);
  send->add_option("--fec", o->fec,
                   "ARQ schemes: send M repair packets after every K data packets (K:M), or size them to the "
                   "measured loss (adaptive); the receiver needs no option")
      ->option_text("K:M|adaptive");
  add_duration_option(*send, "--drain-timeout", o->drain_timeout_s,
                      "Time after the last message to wait for delivery (and echoes) before giving up", 0.001, 86400.0);
  send->add_option("--csv", o->csv, "With --echo: write seq,input_ns,delivered_ns,delay_ms per round trip")
      ->type_name("FILE");
  send->add_option("--fast-retransmit-after", o->fast_retransmit_after,
                   "Selective repeat: resend a hole once this many later packets are acked (0: never)")
      ->capture_default_str();
  add_common(*send, *o);
  auto* recv = app.add_subcommand("arq-recv", "Receive an ARQ channel (or TCP) and report per-message delay");
  add_bind_flags(*recv, o->host, o->port);
  recv->add_option("--listen", o->address)->group("");  // the old spelling: ADDRESS:PORT
  recv->add_option("--csv", o->csv, "Write seq,input_ns,delivered_ns,delay_ms per message (one-way; not with --echo)")
      ->type_name("FILE");
  recv->add_option("--port-file", o->port_file,
                   "Once listening, write the port to this file (atomically: whole or not at all)")
      ->type_name("FILE");
  recv->add_option("--ready-file", o->ready_file)->group("");  // the old spelling: writes "ready"
  add_common(*recv, *o);
  auto metrics = std::make_shared<MetricsFlags>();
  add_metrics_flag(*recv, *metrics);
  auto design = std::make_shared<ProgramDesign>();
  add_program_design_flags(*recv, *design, "the channel's socket, timer and state machine");
  return [o, send, metrics, design]() {
    if (o->address.empty()) {
      if (send->parsed() && send->count("--port") == 0) {
        tools::print(stderr, "volley arq-send: --port is required (the receiver's, or a netem relay's)\n");
        return 2;
      }
      o->address = endpoint_text(o->host, o->port);
    }
    return send->parsed() ? run_send(*o) : run_recv(*o, *metrics, *design);
  };
}

}  // namespace volley::tools
