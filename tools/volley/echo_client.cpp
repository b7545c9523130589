// `volley echo-client`: the pipelined echo benchmark client (the classic flags,
// report lines) over TCP, TLS or UDP, plus --rtt for true round trips.
#include <algorithm>
#include <cmath>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <volley/net/loop_pool.hpp>
#include <volley/net/tcp_connect.hpp>
#include <volley/net/tls.hpp>
#include <volley/net/unix_socket.hpp>
#include <volley/net/websocket.hpp>

#include "commands.hpp"
#include "output.hpp"
#include "duration_flag.hpp"
#include "echo_client_connection.hpp"
#include "echo_client_stream.hpp"
#include "echo_client_udp.hpp"
#include "echo_common.hpp"
#include "file_limit.hpp"
#include "json_output.hpp"
#include "listening.hpp"
#include "tls_flags.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;

struct EchoClientOptions {
  ShmFlags shm{};  // --shm, --shm-spin
  EchoProto proto = EchoProto::tcp;
  std::string address = "127.0.0.1";
  std::uint16_t port = 1111;
  std::size_t threads = 1;
  std::size_t clients = 100;
  std::size_t messages = 1000;
  std::size_t size = 32;
  double seconds = 10;
  double loss_timeout_s = 0.2;
  bool rtt = false;
  bool busy_poll = false;
  bool json = false;
  bool progress = true;
  std::string ca;
  bool insecure = false;
  std::string tls_version = "any";
  std::string ws_path = "/";
  bool on_connection = false;
};

struct Totals {
  std::uint64_t bytes_sent = 0, bytes_received = 0, messages = 0, errors = 0, mismatched = 0, lost = 0;
};

Totals sum(const std::vector<std::unique_ptr<EchoClientCounters>>& counters) {
  Totals t;
  for (const auto& c : counters) {
    t.bytes_sent += c->bytes_sent.load();
    t.bytes_received += c->bytes_received.load();
    t.messages += c->messages.load();
    t.errors += c->errors.load();
    t.mismatched += c->mismatched_bytes.load();
    t.lost += c->lost.load();
  }
  return t;
}

int run_echo_client(const EchoClientOptions& o) {
  raise_file_limit();
  if (o.proto == EchoProto::udp && (o.size < 8 || o.size > kEchoMaxDatagram)) {
    spdlog::error("--proto udp needs -s between 8 (the sequence number) and {} bytes", kEchoMaxDatagram);
    return 2;
  }
  std::unique_ptr<ssl::context> tls;
  if (uses_tls(o.proto)) {
    if (o.insecure)
      spdlog::warn("--insecure: the server's certificate is NOT verified; anyone in the path can read and change the traffic");
    const net::TlsVersion version = o.tls_version == "1.2"   ? net::TlsVersion::tls12
                                    : o.tls_version == "1.3" ? net::TlsVersion::tls13
                                                             : net::TlsVersion::any;
    tls = std::make_unique<ssl::context>(net::make_tls_client_context(o.ca, !o.insecure, version));
  }
  // --unix: Volley's connection (the raw Asio client below is TCP's).
  const bool unix_socket = net::parse_unix_address(o.address).has_value();
  if (unix_socket && o.proto == EchoProto::udp) {
    spdlog::error("--unix is a stream socket: not with --proto udp");
    return 2;
  }
  const auto address = unix_socket ? asio::ip::address() : asio::ip::make_address(o.address);
  // ws and wss run on Volley's own connection with the WebSocket transport
  // (and tcp and tls too with --on-connection: the same client, no transport or TLS).
  const bool on_connection =
      uses_websocket(o.proto) || ((o.on_connection || unix_socket) && o.proto != EchoProto::udp);
  std::function<std::unique_ptr<net::StreamTransport>()> connection_transport = [&tls, &o]() -> std::unique_ptr<net::StreamTransport> {
    if (!tls) return nullptr;
    return net::make_tls_transport(*tls, net::TlsRole::client, o.address);
  };
  if (uses_websocket(o.proto)) {
    net::WebSocketOptions ws;
    ws.host = (address.is_v6() ? "[" + o.address + "]" : o.address) + ":" + std::to_string(o.port);
    ws.target = o.ws_path;
    connection_transport = [ws, &tls, &o] {
      return net::make_websocket_transport(
          net::WebSocketRole::client, ws, tls ? net::make_tls_transport(*tls, net::TlsRole::client, o.address) : nullptr);
    };
  }
  if (o.shm.on)
    connection_transport = shm_client_transport(o.shm, o.address,
                                                tls || uses_websocket(o.proto) ? connection_transport : nullptr);

  net::LoopPool loops(std::min(o.threads, o.clients), o.busy_poll);
  // Each written by its client's loop only. Declared after the loops, so it
  // goes first: a connection's timers must not outlive the loop they belong to.
  std::vector<std::shared_ptr<net::TcpConnection>> connections(o.clients);
  EchoRun run;
  run.message_size = o.size;
  run.in_flight = o.rtt ? 1 : o.messages;
  run.rtt = o.rtt;
  run.loss_timeout = std::chrono::milliseconds(std::max<std::int64_t>(1, std::llround(o.loss_timeout_s * 1e3)));
  run.pattern = std::make_shared<EchoPattern>(std::max<std::size_t>(256 * 1024, run.in_flight * o.size + o.size));

  std::vector<std::unique_ptr<EchoClientCounters>> counters;
  for (std::size_t i = 0; i < o.clients; ++i) counters.push_back(std::make_unique<EchoClientCounters>());
  std::atomic<std::size_t> remaining{o.clients};
  const auto done = [&remaining] { --remaining; };

  if (!o.json) {
    tools::print("Server address: {}\nServer port: {}\nProtocol: {}\nNumber of Threads: {}\nNumber of Clients: {}\n"
               "Number of Concurrent Messages: {}\nMessage Size (bytes): {}\nSeconds for Benchmarking: {}\n\n",
               o.address, o.port, to_string(o.proto), loops.size(), o.clients, run.in_flight, o.size, o.seconds);
    std::fflush(stdout);
  }
  const auto start = EchoRun::Clock::now();
  run.deadline = start + std::chrono::duration_cast<EchoRun::Clock::duration>(std::chrono::duration<double>(o.seconds));
  for (std::size_t i = 0; i < o.clients; ++i) {
    auto& loop = loops.loop(i % loops.size());
    EchoClientCounters& c = *counters[i];
    asio::post(loop, [&, i, &loop = loop, &c = c] {
      if (o.proto == EchoProto::udp) {
        std::make_shared<UdpEchoClient>(loop, run, c, done)->start({address, o.port});
      } else if (on_connection) {
        std::error_code ec;
        auto socket = net::connect_tcp(loop, o.address, o.port, std::chrono::seconds(5), ec);
        if (ec) {
          ConnectionEchoClient::count_failure(c, "connect: " + ec.message());
          return done();
        }
        net::ConnectionLimits limits;
        limits.handshake_timeout = std::chrono::seconds(5);
        connections[i] = std::make_shared<net::TcpConnection>(
            std::move(socket), std::make_unique<ConnectionEchoClient>(run, c, done), limits, connection_transport());
        connections[i]->start();
      } else if (o.proto == EchoProto::tls) {
        std::make_shared<StreamEchoClient<ssl::stream<asio::ip::tcp::socket>>>(run, c, done, loop, *tls)
            ->start({address, o.port}, o.address);
      } else {
        std::make_shared<StreamEchoClient<asio::ip::tcp::socket>>(run, c, done, loop)->start({address, o.port}, o.address);
      }
    });
  }
  loops.start();
  loops.release();  // each loop returns once its clients have finished
  Totals last{};
  while (remaining.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const double t = seconds_since(start);
    if (o.progress && static_cast<long>(t * 10) % 10 == 0 && t >= 1.0) {
      const Totals now = sum(counters);
      tools::print(stderr, "[echo-client {:5.1f}s] {:>10} msgs/s {:>8.1f} MB/s | {} errors\n", t,
                 now.messages - last.messages, static_cast<double>(now.bytes_received - last.bytes_received) / 1e6,
                 now.errors);
      last = now;
    }
  }
  loops.join();

  const Totals t = sum(counters);
  auto end = start;
  metrics::Histogram rtt;
  std::string first_error;
  for (const auto& c : counters) {
    end = std::max(end, c->finished);
    rtt.merge(c->rtt_ns);
    if (first_error.empty()) first_error = c->first_error;
  }
  const auto total_ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
  const double secs = static_cast<double>(total_ns) / 1e9;
  const std::uint64_t errors = t.errors + (t.mismatched > 0 ? 1 : 0);
  const double msgs_per_s = secs > 0 ? static_cast<double>(t.messages) / secs : 0.0;
  const double bytes_per_s = secs > 0 ? static_cast<double>(t.bytes_received) / secs : 0.0;
  const std::uint64_t latency_ns = t.messages ? total_ns / t.messages : 0;
  if (!first_error.empty()) spdlog::error("first error: {}", first_error);
  if (t.mismatched > 0) spdlog::error("{} echoed bytes differed from what was sent", t.mismatched);

  if (o.json) {
    boost::json::object r{{"tool", "volley echo-client"},  {"proto", to_string(o.proto)}, {"threads", loops.size()},
                          {"clients", o.clients},           {"in_flight", run.in_flight},  {"message_size", o.size},
                          {"seconds", o.seconds},           {"busy_poll", o.busy_poll},    {"errors", errors},
                          {"lost", t.lost},                 {"mismatched_bytes", t.mismatched},
                          {"total_time_ns", total_ns},      {"total_bytes", t.bytes_received},
                          {"bytes_sent", t.bytes_sent},     {"total_messages", t.messages},
                          {"bytes_per_s", bytes_per_s},     {"msgs_per_s", msgs_per_s},
                          {"inverse_throughput_ns", latency_ns}};
    if (!first_error.empty()) r["first_error"] = first_error;
    if (o.rtt) {
      r["rtt_ns"] = boost::json::object{{"count", rtt.count()},          {"min", rtt.min()},
                                        {"p50", rtt.percentile(50)},     {"p90", rtt.percentile(90)},
                                        {"p99", rtt.percentile(99)},     {"p99_9", rtt.percentile(99.9)},
                                        {"max", rtt.max()},              {"mean", rtt.mean()}};
      r["round_trips_per_s"] = secs > 0 ? static_cast<double>(rtt.count()) / secs : 0.0;
    }
    tools::print("{}\n", to_json_text(r));
  } else {
    tools::print("Errors: {}\n\nTotal Time: {} ns\nTotal Data: {} bytes\nTotal Messages: {}\nData throughput: {} bytes/s\n"
               "Average Message Latency: {} ns\nMessage Throughput: {} msgs/s\n",
               errors, total_ns, t.bytes_received, t.messages, static_cast<std::uint64_t>(bytes_per_s), latency_ns,
               static_cast<std::uint64_t>(msgs_per_s));
    tools::print("(Average Message Latency is total time / messages: inverse throughput, not a round trip; --rtt measures round trips)\n");
    if (o.rtt) {
      const auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e3; };
      tools::print("\nRound trips: {} (one message in flight per client)\n"
                 "Round trip (us): min {:.1f}  p50 {:.1f}  p90 {:.1f}  p99 {:.1f}  p99.9 {:.1f}  max {:.1f}\n"
                 "Round trips per second: {:.0f}\n",
                 rtt.count(), us(rtt.min()), us(rtt.percentile(50)), us(rtt.percentile(90)), us(rtt.percentile(99)),
                 us(rtt.percentile(99.9)), us(rtt.max()), secs > 0 ? static_cast<double>(rtt.count()) / secs : 0.0);
    }
  }
  return errors == 0 ? 0 : 1;
}

}  // namespace

Runner add_echo_client_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("echo-client", "Pipelined echo benchmark client (clients x messages in flight, throughput and latency report) over TCP, TLS, UDP, WebSocket or WebSocket over TLS");
  auto o = std::make_shared<EchoClientOptions>();
  add_proto_option(*cmd, o->proto);
  add_connect_flags(*cmd, o->address, o->port);
  add_unix_connect_flags(*cmd, o->address, o->shm);
  cmd->add_option("-t,--threads", o->threads, "Client loops (threads); clients are spread over them")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("-c,--clients", o->clients, "Client connections")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("-m,--messages", o->messages, "Messages in flight per client (ignored with --rtt: 1)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("-s,--size", o->size, "Message size")->type_name("BYTES")->check(CLI::Range(1, 16 << 20))->capture_default_str();
  add_duration_option(*cmd, "-z,--duration", o->seconds, "How long to benchmark", 0.01, kMaxRunSeconds);
  add_old_duration_alias(*cmd, "--seconds", o->seconds, 1.0, 0.01, kMaxRunSeconds);
  add_duration_option(*cmd, "--lost-after", o->loss_timeout_s,
                      "UDP: time after which a datagram not echoed counts as lost (and is replaced)", 0.001, 600.0);
  add_old_duration_alias(*cmd, "--loss-timeout", o->loss_timeout_s, 1e-3, 0.001, 600.0);
  cmd->add_flag("--rtt", o->rtt, "One message in flight per client; time every round trip (min/p50/p90/p99/p99.9/max)");
  cmd->add_flag("--busy-poll", o->busy_poll, "Client loops spin instead of sleeping in the kernel (a CPU each)");
  cmd->add_option("--ca", o->ca, "TLS: CA certificate file to verify the server with")
      ->type_name("FILE")
      ->default_str("the system's")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--insecure", o->insecure, "TLS: do not verify the server's certificate (says so loudly)");
  cmd->add_option("--tls-version", o->tls_version, "TLS: the versions offered (any: 1.2 or 1.3)")
      ->option_text("any|1.2|1.3")
      ->check(CLI::IsMember({"any", "1.2", "1.3"}))
      ->capture_default_str();
  cmd->add_option("--ws-path", o->ws_path, "WebSocket: the request target of the upgrade")
      ->type_name("PATH")
      ->capture_default_str();
  cmd->add_flag("--on-connection", o->on_connection,
                "tcp, tls: run on Volley's own connection (the client ws and wss use) instead of plain Asio streams, "
                "to compare transports with the client alike");
  cmd->add_flag("--json", o->json, "Print the report as JSON on stdout");
  cmd->add_flag("!--no-progress", o->progress, "No progress line each second on stderr");
  return [o] { return run_echo_client(*o); };
}

}  // namespace volley::tools
