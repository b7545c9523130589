// `volley arq-send` and `volley arq-recv`: one message every interval over an
// ARQ channel (or over TCP, the reliable baseline), and per-message delay =
// delivery time - input time at the receiver.
#include <csignal>
#include <fstream>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <volley/arq/udp_channel.hpp>

#include "arq_commands.hpp"
#include "arq_messages.hpp"
#include "commands.hpp"
#include "json_output.hpp"
#include "listening.hpp"

namespace volley::tools {

namespace asio = boost::asio;
using asio::ip::udp;

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
  if (o.fixed_timeout_ms > 0)
    c.sender.rto.fixed = std::chrono::duration_cast<arq::Nanos>(std::chrono::duration<double, std::milli>(o.fixed_timeout_ms));
  return c;
}

std::string check_arq_options(const ArqOptions& o) {
  if (o.protocol != "tcp" && !parse_scheme(o.protocol)) return "--protocol must be sr, gbn, saw or tcp";
  if (o.size < kArqStampSize || o.size > kMaxMessageSize)
    return fmt::format("--size must be {} to {} bytes", kArqStampSize, kMaxMessageSize);
  return {};
}

namespace {

int run_recv(const ArqOptions& o) {
  if (auto e = check_arq_options(o); !e.empty()) {
    fmt::print(stderr, "volley arq-recv: {}\n", e);
    return 2;
  }
  const auto listen = parse_udp_endpoint(o.address);
  if (!listen) {
    fmt::print(stderr, "volley arq-recv: --listen must be ADDRESS:PORT\n");
    return 2;
  }
  asio::io_context loop(1);
  std::vector<DeliveryRecord> records;
  std::uint64_t damaged = 0;  // a message whose filler is not what the sender wrote
  std::string error;
  auto record = [&](std::span<const std::byte> m) {
    if (m.size() < kArqStampSize || !intact(m)) {
      damaged += 1;
      return;
    }
    const Stamp s = read_stamp(m);
    records.push_back({s.seq, s.input_ns, arq::ArqChannel::now().count()});
  };
  asio::signal_set signals(loop, SIGINT, SIGTERM);
  std::unique_ptr<arq::ArqChannel> channel;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor;
  asio::ip::tcp::socket tcp(loop);
  std::vector<std::byte> frame;
  std::array<std::byte, 4> length{};
  std::function<void()> read_tcp = [&] {
    asio::async_read(tcp, asio::buffer(length), [&](const boost::system::error_code& ec, std::size_t) {
      if (ec) {  // end of stream (or an error): done
        if (ec != asio::error::eof) error = ec.message();
        signals.cancel();
        return;
      }
      // The length is the peer's word: never allocate more than a message can be.
      const std::uint32_t n = wire::load_u32_be(length.data());
      if (n > kMaxMessageSize) {
        error = fmt::format("message length {} over the maximum {} (connection closed)", n, kMaxMessageSize);
        boost::system::error_code ignored;
        tcp.close(ignored);
        signals.cancel();
        return;
      }
      frame.resize(n);
      asio::async_read(tcp, asio::buffer(frame), [&](const boost::system::error_code& ec2, std::size_t) {
        if (ec2) {
          error = ec2.message();
          signals.cancel();
          return;
        }
        record(frame);
        read_tcp();
      });
    });
  };
  try {
    if (o.protocol == "tcp") {
      acceptor = std::make_unique<asio::ip::tcp::acceptor>(
          loop, asio::ip::tcp::endpoint(listen->address(), listen->port()));
      acceptor->async_accept(tcp, [&](const boost::system::error_code& ec) {
        if (ec) return;
        tcp.set_option(asio::ip::tcp::no_delay(true));
        read_tcp();
      });
    } else {
      const ArqConfigs c = make_configs(o);
      channel = std::make_unique<arq::ArqChannel>(loop, udp::socket(loop, *listen), std::nullopt, c.sender,
                                                  c.receiver, record);
      channel->start();
      channel->on_peer_finished([&](const std::string&) {
        // Keep answering a little longer: the peer's last acks may be lost.
        auto linger = std::make_shared<asio::steady_timer>(loop, std::chrono::milliseconds(500));
        linger->async_wait([&, linger](const boost::system::error_code&) {
          channel->stop();
          signals.cancel();
        });
      });
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "volley arq-recv: cannot listen on {}: {}\n", o.address, e.what());
    return 1;
  }
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    error = "interrupted";
    if (channel) channel->stop();
    if (acceptor) acceptor->close();
    boost::system::error_code ignored;
    tcp.close(ignored);
  });
  // Announced once the signal wait is in place, as every server program does.
  if (acceptor) announce_listening("tcp", acceptor->local_endpoint().address().to_string(), acceptor->local_endpoint().port(), o.port_file);
  else announce_listening("udp", channel->local_endpoint().address().to_string(), channel->local_endpoint().port(), o.port_file);
  if (!o.ready_file.empty()) std::ofstream(o.ready_file) << "ready\n";
  loop.run();

  if (!o.csv.empty()) write_csv(o.csv, records);
  const DelayStats s = delay_stats(records);
  boost::json::object report{{"tool", "volley arq-recv"}, {"protocol", o.protocol}, {"delay", to_json(s)},
                              {"damaged_messages", damaged}, {"error", error}};
  if (channel) {
    report["foreign_datagrams"] = channel->stats().foreign_datagrams;
    const auto& r = channel->receiver().stats();
    report["receiver"] = boost::json::object{{"packets_received", r.packets_received}, {"delivered", r.delivered},
                                             {"duplicates", r.duplicates},
                                             {"out_of_order_discarded", r.out_of_order_discarded},
                                             {"bad_packets", r.bad_packets}, {"acks_sent", r.acks_sent},
                                             {"ack_bytes", r.bytes_on_wire}};
  }
  if (o.json) {
    fmt::print("{}\n", to_json_text(report));
  } else {
    fmt::print("arq-recv ({}): {} messages; delay mean {:.3f} ms, median {:.3f} ms, stdev {:.3f} ms, min {:.3f} ms, "
               "p99 {:.3f} ms, max {:.3f} ms{}\n",
               o.protocol, s.count, s.mean, s.median, s.stdev, s.min, s.p99, s.max,
               error.empty() ? "" : "; error: " + error);
    if (channel) fmt::print("  foreign datagrams (not from the sender, ignored): {}\n", channel->stats().foreign_datagrams);
  }
  return error.empty() ? 0 : 1;
}

int run_send(const ArqOptions& o) {
  if (auto e = check_arq_options(o); !e.empty()) {
    fmt::print(stderr, "volley arq-send: {}\n", e);
    return 2;
  }
  const auto to = parse_udp_endpoint(o.address);
  if (!to) {
    fmt::print(stderr, "volley arq-send: --to must be ADDRESS:PORT\n");
    return 2;
  }
  asio::io_context loop(1);
  std::string error;
  std::uint64_t next = 0;
  std::uint64_t payload_bytes = 0;
  asio::steady_timer pacer(loop);
  std::unique_ptr<arq::ArqChannel> channel;
  asio::ip::tcp::socket tcp(loop);
  const auto interval = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double, std::milli>(o.interval_ms));
  auto start = std::chrono::steady_clock::now();  // set again once connected: pacing starts at the first message
  std::function<void()> tick = [&] {
    if (next == o.count) {
      if (channel) {
        channel->close([&](const std::string& e) {
          error = e;
          channel->stop();
        });
      } else {
        boost::system::error_code ignored;
        tcp.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
        tcp.close(ignored);
      }
      return;
    }
    const auto m = stamped_message(next, arq::ArqChannel::now().count(), o.size);
    if (channel) {
      if (!channel->send(m)) {
        error = channel->sender().failed() ? channel->sender().error() : "send buffer full";
        channel->stop();
        return;
      }
    } else {
      std::vector<std::byte> framed(4 + m.size());
      wire::store_u32_be(framed.data(), static_cast<std::uint32_t>(m.size()));
      std::copy(m.begin(), m.end(), framed.begin() + 4);
      boost::system::error_code ec;
      asio::write(tcp, asio::buffer(framed), ec);  // the kernel's buffer absorbs it; TCP's own pacing applies
      if (ec) {
        error = ec.message();
        return;
      }
    }
    payload_bytes += m.size();
    ++next;
    pacer.expires_at(start + interval * static_cast<std::int64_t>(next));
    pacer.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) tick();
    });
  };
  try {
    if (o.protocol == "tcp") {
      tcp.connect(asio::ip::tcp::endpoint(to->address(), to->port()));
      tcp.set_option(asio::ip::tcp::no_delay(true));
    } else {
      const ArqConfigs c = make_configs(o);
      udp::socket socket(loop, udp::endpoint(to->protocol(), 0));
      channel = std::make_unique<arq::ArqChannel>(loop, std::move(socket), *to, c.sender, c.receiver,
                                                  [](std::span<const std::byte>) {});
      channel->start();
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "volley arq-send: cannot reach {}: {}\n", o.address, e.what());
    return 1;
  }
  start = std::chrono::steady_clock::now();
  tick();
  loop.run();
  const double seconds = seconds_since(start);
  boost::json::object report{{"tool", "volley arq-send"}, {"protocol", o.protocol}, {"messages", next},
                             {"payload_bytes", payload_bytes}, {"seconds", seconds}, {"error", error}};
  if (channel) {
    const auto& s = channel->sender().stats();
    report["sender"] = boost::json::object{
        {"packets_sent", s.packets_sent},     {"retransmissions", s.retransmissions},
        {"timeouts", s.timeouts},             {"fast_retransmits", s.fast_retransmits},
        {"data_bytes_on_wire", s.bytes_on_wire}, {"acks_received", s.acks_received},
        {"srtt_ms", static_cast<double>(channel->sender().rto().srtt().count()) / 1e6},
        {"rto_ms", static_cast<double>(channel->sender().rto().rto().count()) / 1e6}};
  }
  if (o.json) {
    fmt::print("{}\n", to_json_text(report));
  } else if (channel) {
    const auto& s = channel->sender().stats();
    fmt::print("arq-send ({}): {} messages in {:.3f} s; {} packets, {} retransmissions ({} timeouts, {} fast), "
               "data bytes on the wire per payload byte {:.3f}{}\n",
               o.protocol, next, seconds, s.packets_sent, s.retransmissions, s.timeouts, s.fast_retransmits,
               payload_bytes ? static_cast<double>(s.bytes_on_wire) / static_cast<double>(payload_bytes) : 0.0,
               error.empty() ? "" : "; error: " + error);
  } else {
    fmt::print("arq-send (tcp): {} messages in {:.3f} s{}\n", next, seconds, error.empty() ? "" : "; error: " + error);
  }
  return error.empty() ? 0 : 1;
}

void add_common(CLI::App& cmd, ArqOptions& o) {
  cmd.add_option("--protocol", o.protocol, "sr (selective repeat), gbn (go-back-N), saw (stop-and-wait), or tcp")
      ->capture_default_str();
  cmd.add_option("--window", o.window, "Window in packets (sender and receiver)")->capture_default_str()->check(CLI::Range(1, 65535));
  cmd.add_option("--size", o.size, "Message size in bytes (16 bytes of it are the sequence and input time)")
      ->capture_default_str();
  cmd.add_flag("--json", o.json, "Print the report as JSON");
}

}  // namespace

Runner add_arq_commands(CLI::App& app) {
  auto o = std::make_shared<ArqOptions>();
  auto* send = app.add_subcommand("arq-send", "Send a message every interval over an ARQ channel (or TCP)");
  send->add_option("--to", o->address, "ADDRESS:PORT of the receiver (or of a netem relay)")->required();
  send->add_option("--count", o->count, "Messages to send")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}));
  send->add_option("--interval", o->interval_ms, "Milliseconds between messages")->capture_default_str()->check(CLI::NonNegativeNumber);
  send->add_option("--timeout", o->fixed_timeout_ms, "Fixed retransmission timeout in ms (default: RFC 6298 estimate)");
  send->add_option("--fast-retransmit-after", o->fast_retransmit_after,
                   "Selective repeat: resend a hole once this many later packets are acked (0: never)")
      ->capture_default_str();
  add_common(*send, *o);
  auto* recv = app.add_subcommand("arq-recv", "Receive an ARQ channel (or TCP) and report per-message delay");
  recv->add_option("--listen", o->address, "ADDRESS:PORT to receive on")->required();
  recv->add_option("--csv", o->csv, "Write seq,input_ns,delivered_ns,delay_ms per message");
  recv->add_option("--ready-file", o->ready_file, "Write this file once listening");
  recv->add_option("--port-file", o->port_file,
                   "Once listening, write the port to this file (atomically: whole or not at all)");
  add_common(*recv, *o);
  return [o, send]() { return send->parsed() ? run_send(*o) : run_recv(*o); };
}

}  // namespace volley::tools
