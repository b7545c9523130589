// `volley echo-server`: the echo server of the echo benchmarks (a raw byte
// stream, every byte sent back) over TCP, TLS or UDP, one loop per worker thread.
#include <sys/resource.h>

#include <deque>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <volley/metrics/counter.hpp>
#include <volley/net/server.hpp>
#include <volley/net/udp_endpoint.hpp>

#include "commands.hpp"
#include "output.hpp"
#include "duration_flag.hpp"
#include "echo_common.hpp"
#include "endpoint.hpp"
#include "file_limit.hpp"
#include "json_output.hpp"
#include "listening.hpp"
#include "metrics_service.hpp"
#include "progress_timer.hpp"
#include "tls_flags.hpp"

namespace volley::tools {
namespace {

namespace asio = boost::asio;

struct EchoServerOptions {
  EchoProto proto = EchoProto::tcp;
  ListenFlags listen{.bind = kDefaultBind, .port = 1111, .port_file = {}};
  std::size_t threads = 1;
  bool busy_poll = false;
  net::Design design = net::Design::loop_per_thread;
  bool json = false;
  bool progress = true;
  TlsServerFlags tls;  // --proto tls or wss sets tls.tls
  WebSocketFlags ws;   // --proto ws or wss sets ws.ws
  MetricsFlags metrics;
};

// A slot's counters, read by the reporter: written by one worker loop, or
// by any thread of the pool in the thread-pool design.
struct WorkerCounters {
  metrics::SlotCounter connections;
  metrics::SlotCounter bytes;
  metrics::SlotCounter datagrams;
  metrics::SlotCounter errors;
  bool shared = false;
  void add(metrics::SlotCounter& counter, std::uint64_t n = 1) noexcept { counter.add(n, shared); }
};

constexpr std::size_t kReadSize = 64 * 1024;
constexpr std::size_t kHighWater = 4 * 1024 * 1024;

// Echoes without copying: each read lands in its own buffer, which is queued
// back as borrowed bytes and reused once the write that carried it finished.
class TcpEchoHandler final : public net::StreamHandler {
 public:
  // `handshake`: what a failed handshake is called in the log ("TLS handshake").
  TcpEchoHandler(WorkerCounters& counters, const char* handshake) : counters_(counters), handshake_(handshake) {}

  void on_open(net::TcpConnection&) override { counters_.add(counters_.connections); }

  std::span<std::byte> read_buffer() override {
    if (!current_) current_ = take_buffer();
    return {current_.get(), kReadSize};
  }

  void on_data(net::TcpConnection& c, std::size_t n) override {
    counters_.add(counters_.bytes, n);
    if (!c.send_borrowed(std::span<const std::byte>(current_.get(), n))) return;  // closing: keep the buffer
    queued_bytes_ += n;
    in_write_.push_back({std::move(current_), n});
    // A client that does not read its echoes stops being read: memory stays bounded.
    if (queued_bytes_ > kHighWater) c.pause_reading();
  }

  void on_written(net::TcpConnection& c, std::size_t bytes) override {
    // Writes finish whole batches, in order: release exactly the buffers they carried.
    while (bytes > 0 && !in_write_.empty()) {
      bytes -= in_write_.front().size;
      queued_bytes_ -= in_write_.front().size;
      free_.push_back(std::move(in_write_.front().data));
      in_write_.pop_front();
    }
    if (queued_bytes_ < kHighWater / 2) c.resume_reading();
  }

  void on_close(net::TcpConnection& c, const net::CloseReason& reason) override {
    if (reason.kind == net::CloseReason::Kind::handshake_failed) {
      spdlog::warn("{}: {} failed: {}", c.peer(), handshake_, reason.detail);
    } else if (reason.kind == net::CloseReason::Kind::io_error || reason.kind == net::CloseReason::Kind::protocol_error) {
      counters_.add(counters_.errors);
      spdlog::debug("{}: {}", c.peer(), reason.detail);
    }
  }

 private:
  struct Filled {
    std::unique_ptr<std::byte[]> data;
    std::size_t size;
  };
  std::unique_ptr<std::byte[]> take_buffer() {
    if (free_.empty()) return std::make_unique_for_overwrite<std::byte[]>(kReadSize);
    auto b = std::move(free_.back());
    free_.pop_back();
    return b;
  }

  WorkerCounters& counters_;
  const char* handshake_;
  std::unique_ptr<std::byte[]> current_;
  std::deque<Filled> in_write_;
  std::vector<std::unique_ptr<std::byte[]>> free_;
  std::size_t queued_bytes_ = 0;
};

// One UDP socket per worker slot on the same port (SO_REUSEPORT spreads peers
// over them); each wake-up drains the socket in batches and sends every batch
// back. The slot's executor is its own loop, or in the thread-pool design a
// strand of the shared loop: any thread may serve any socket, one at a time.
class UdpEchoWorker {
 public:
  UdpEchoWorker(const asio::any_io_executor& slot, const asio::ip::udp::endpoint& endpoint, WorkerCounters& counters)
      : endpoint_(slot, endpoint, options()), counters_(counters) {}
  asio::ip::udp::endpoint local_endpoint() const { return endpoint_.local_endpoint(); }
  void start() {
    // Each datagram goes back where it came from; a batch's echoes leave in one sendmmsg.
    endpoint_.start(
        [this](std::span<const std::byte> datagram, const asio::ip::udp::endpoint& from) {
          endpoint_.send(datagram, from);
          counters_.add(counters_.datagrams);
          counters_.add(counters_.bytes, datagram.size());
        },
        [this] { count_errors(); });
  }
  void stop() {
    endpoint_.stop();
    count_errors();
  }
  // Datagrams the kernel dropped on this socket (receive buffer full), as of stop().
  std::uint64_t kernel_drops() { return endpoint_.kernel_drops(); }

 private:
  static net::UdpEndpointOptions options() {
    net::UdpEndpointOptions o;
    o.batch = kEchoUdpBatch;
    o.max_datagram = kEchoMaxDatagram;
    o.receive_buffer_bytes = o.send_buffer_bytes = 4 << 20;
    o.reuse_port = true;  // one socket per worker loop on one port
    return o;
  }
  // Echoes the kernel refused, receive errors and truncated datagrams since the last count.
  void count_errors() {
    const net::UdpEndpointStats& s = endpoint_.stats();
    const std::uint64_t errors = s.send_failures + s.receive_errors + s.truncated;
    if (errors != errors_counted_) counters_.add(counters_.errors, errors - errors_counted_);
    errors_counted_ = errors;
  }

  net::UdpEndpoint endpoint_;
  WorkerCounters& counters_;
  std::uint64_t errors_counted_ = 0;
};

int run_echo_server(const EchoServerOptions& o) {
  raise_file_limit();
  net::ServerOptions server_opts = server_options(o.listen, o.threads, o.busy_poll);
  server_opts.design = o.design;
  // TLS and WebSocket run under the same connection as TCP: same echo
  // handler, limits and shutdown. Each WebSocket message comes back as one
  // message, however its bytes were read.
  TlsServerFlags tls = o.tls;
  tls.tls = uses_tls(o.proto);
  apply_tls(server_opts, tls);
  WebSocketFlags ws = o.ws;
  ws.ws = uses_websocket(o.proto);
  ws.echo_messages = true;
  apply_websocket(server_opts, ws);
  apply_shm(server_opts, o.listen.shm);
  if (ws.ws)  // the upgrade is part of the handshake, with or without TLS
    server_opts.connection_limits.handshake_timeout =
        std::chrono::milliseconds(static_cast<std::int64_t>(o.tls.handshake_timeout_s * 1000));
  net::Server server(server_opts);
  auto& workers = server.workers();
  std::vector<WorkerCounters> counters(workers.size());
  for (auto& c : counters) c.shared = o.design == net::Design::thread_pool;

  std::vector<std::unique_ptr<UdpEchoWorker>> udp;
  std::uint16_t port = 0;
  if (o.proto == EchoProto::udp) {
    asio::ip::udp::endpoint endpoint(asio::ip::make_address(o.listen.bind), o.listen.port);
    for (std::size_t w = 0; w < workers.size(); ++w) {
      udp.push_back(std::make_unique<UdpEchoWorker>(workers.slot_executor(w), endpoint, counters[w]));
      endpoint = udp.front()->local_endpoint();  // port 0: the others join the first one's port
    }
    port = endpoint.port();
  } else {
    server.listen([&](std::size_t w) -> std::unique_ptr<net::StreamHandler> {
      return std::make_unique<TcpEchoHandler>(counters[w], o.proto == EchoProto::tls   ? "TLS handshake"
                                                           : o.proto == EchoProto::ws  ? "WebSocket upgrade"
                                                                                       : "TLS handshake or WebSocket upgrade");
    });
    port = server.port();
  }

  const auto sum = [&] {
    EchoServerTotals t;
    for (const auto& c : counters) {
      t.connections += c.connections.load();
      t.bytes += c.bytes.load();
      t.datagrams += c.datagrams.load();
      t.errors += c.errors.load();
    }
    t.handshake_failures = server.handshake_failures();
    return t;
  };
  // The counters are relaxed atomics: a scrape sums them where it is.
  MetricsService metrics(server, o.metrics, [&](http::MetricsEndpoint::Answer answer) {
    const EchoServerTotals t = sum();
    metrics::PrometheusText out;
    const auto counter = [&](const char* name, const char* help, std::uint64_t v) {
      out.family(name, "counter", help);
      out.sample(name, static_cast<double>(v));
    };
    counter("volley_connections_opened_total", "Connections opened (TCP, TLS, WebSocket).", t.connections);
    counter("volley_echoed_bytes_total", "Bytes echoed back.", t.bytes);
    counter("volley_echoed_datagrams_total", "Datagrams echoed back (UDP).", t.datagrams);
    counter("volley_errors_total", "Connections ended by an I/O or WebSocket protocol error, and UDP send errors.", t.errors);
    write_server_metrics(out, server, ws);
    answer(out.text());
  });

  const auto start = Clock::now();
  EchoServerTotals last{};
  ProgressTimer progress(server.control_loop(), [&] {
    const EchoServerTotals now = sum();
    if (now.bytes != last.bytes)
      tools::print(stderr, "[echo-server {:6.1f}s] {:>9.1f} MB/s echoed | {} connections, {} errors\n",
                 seconds_since(start), static_cast<double>(now.bytes - last.bytes) / 1e6, now.connections, now.errors);
    last = now;
  });
  for (auto& u : udp) u->start();
  server.on_ready([&] {
    const std::string proto = udp.empty() ? served_proto(o.listen, to_string(o.proto)) : std::string(to_string(o.proto));
    if (udp.empty())
      announce_server(proto, server, o.listen.port_file);
    else
      announce_listening(proto, o.listen.bind, port, o.listen.port_file);
    spdlog::info("volley echo-server: {} on {}, {} worker threads ({}){}, receive path {}",
                 proto, udp.empty() ? server.listening_text() : endpoint_text(o.listen.bind, port), workers.size(), net::to_string(o.design),
                 o.busy_poll ? ", busy-poll" : "", net::to_string(workers.receive_path()));
    metrics.start();
    if (o.progress) progress.start();
  });
  // The UDP sockets are the echo server's own; the Server closes the TCP and TLS connections itself.
  server.on_stop([&] {
    progress.stop();
    metrics.stop();
    for (std::size_t w = 0; w < workers.size() && !udp.empty(); ++w)
      asio::post(workers.slot_executor(w), [&, w] { udp[w]->stop(); });
  });
  server.run();

  const EchoServerTotals t = sum();
  boost::json::object report{{"tool", "volley echo-server"}, {"proto", to_string(o.proto)},
                             {"connections", t.connections},  {"bytes", t.bytes},
                             {"datagrams", t.datagrams},      {"errors", t.errors},
                             {"uptime_s", seconds_since(start)}};
  add_server_counters(report, server, ws.stats->floods.load());
  if (!udp.empty()) {
    std::uint64_t drops = 0;
    for (const auto& u : udp) drops += u->kernel_drops();
    report["kernel_drops"] = drops;
    if (!o.json) tools::print("datagrams the kernel dropped (receive buffers full): {}\n", drops);
  }
  if (o.json) {
    tools::print("{}\n", to_json_text(report));
  } else {
    tools::print("connections {}, bytes echoed {}, datagrams {}, errors {}; {}\n", t.connections, t.bytes,
                 t.datagrams, t.errors, server_counters_text(server, ws.stats->floods.load()));
  }
  return 0;
}

}  // namespace

Runner add_echo_server_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("echo-server", "Echo server (raw byte stream, every byte sent back) over TCP, TLS, UDP, WebSocket or WebSocket over TLS");
  auto o = std::make_shared<EchoServerOptions>();
  add_proto_option(*cmd, o->proto);
  add_listen_flags(*cmd, o->listen);
  cmd->add_option("-t,--threads", o->threads, "Worker loops (threads)")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_flag("--busy-poll", o->busy_poll, "Worker loops spin instead of sleeping in the kernel (a CPU each)");
  add_design_flag(*cmd, o->design);
  add_metrics_flag(*cmd, o->metrics);
  cmd->add_option("--cert", o->tls.cert, "TLS: certificate chain (PEM)")->type_name("FILE")->check(CLI::ExistingFile);
  cmd->add_option("--key", o->tls.key, "TLS: private key (PEM)")->type_name("FILE")->check(CLI::ExistingFile);
  cmd->add_option("--client-ca", o->tls.client_ca, "TLS: require a client certificate signed by this CA (mutual TLS)")
      ->type_name("FILE")
      ->check(CLI::ExistingFile);
  add_duration_option(*cmd, "--handshake-timeout", o->tls.handshake_timeout_s,
                      "TLS, WebSocket: time a client has to finish its handshake (TLS and upgrade); then it is closed "
                      "and counted as a failed handshake",
                      0.01, 3600.0);
  cmd->add_option("--ws-path", o->ws.path, "WebSocket: the only request target served")
      ->type_name("PATH")
      ->capture_default_str();
  cmd->add_option("--ws-max-message", o->ws.max_message,
                  "WebSocket: longest message accepted (longer: closed with code 1009)")
      ->type_name("BYTES")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
  cmd->add_flag("--json", o->json, "Print the final totals as JSON on stdout");
  cmd->add_flag("!--no-progress", o->progress, "No progress line each second on stderr");
  return [o] { return run_echo_server(*o); };
}

}  // namespace volley::tools
