#include "arq_transport.hpp"

#include <fmt/core.h>

namespace volley::tools {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

boost::json::object arq_report(arq::ArqChannel& channel) {  // kernel_drops reads /proc
  const auto& e = channel.endpoint();
  const auto& s = e.sender().stats();
  const auto& r = e.receiver().stats();
  boost::json::object o{
      {"foreign_datagrams", channel.stats().foreign_datagrams},
      {"kernel_drops", channel.kernel_drops()},
      {"send_failures", channel.udp_stats().send_failures},  // datagrams the kernel refused: losses
      {"bytes_sent", e.bytes_sent()},
      {"sender", boost::json::object{{"packets_sent", s.packets_sent},
                                     {"retransmissions", s.retransmissions},
                                     {"timeouts", s.timeouts},
                                     {"fast_retransmits", s.fast_retransmits},
                                     {"data_bytes_on_wire", s.bytes_on_wire},
                                     {"acks_received", s.acks_received},
                                     {"srtt_ms", static_cast<double>(e.sender().rto().srtt().count()) / 1e6},
                                     {"rto_ms", static_cast<double>(e.sender().rto().rto().count()) / 1e6}}},
      {"receiver", boost::json::object{{"packets_received", r.packets_received},
                                       {"delivered", r.delivered},
                                       {"duplicates", r.duplicates},
                                       {"out_of_order_discarded", r.out_of_order_discarded},
                                       {"bad_packets", r.bad_packets},
                                       {"acks_sent", r.acks_sent},
                                       {"ack_bytes", r.bytes_on_wire}}}};
  if (const auto* f = e.fec_encoder())
    o["fec_sent"] = boost::json::object{{"groups", f->stats().groups},
                                        {"repair_packets", f->stats().repair_packets},
                                        {"repair_bytes", f->stats().repair_bytes},
                                        {"last_k", f->stats().k},
                                        {"last_m", f->stats().m},
                                        {"loss_estimate", f->stats().loss_estimate}};
  const auto& d = e.fec_decoder().stats();
  o["fec_received"] = boost::json::object{{"repairs_received", d.repairs_received},
                                          {"rebuilt", d.recovered},
                                          {"originals_after_rebuild", d.originals_after_rebuild},
                                          {"groups_unrepairable", d.groups_unrepairable},
                                          {"bad_packets", d.bad_packets}};
  return o;
}

boost::json::object sctp_report(const arq::SctpChannel& channel) {
  const auto& s = channel.stats();
  return {{"sctp", boost::json::object{{"messages_sent", s.messages_sent},
                                       {"messages_received", s.messages_received},
                                       {"datagrams_sent", s.datagrams_sent},
                                       {"datagrams_received", s.datagrams_received},
                                       {"bytes_sent", s.bytes_sent},
                                       {"retransmitted_chunks", s.retransmissions},
                                       {"shutdown_aborts", s.shutdown_aborts},
                                       {"foreign_datagrams", s.foreign_datagrams}}},
          {"kernel_drops", channel.kernel_drops()}};
}

boost::json::object tcp_report(const net::TcpMessageChannel& channel) {
  return {{"tcp", boost::json::object{{"bytes_sent", channel.stats().bytes_sent},
                                      {"bytes_received", channel.stats().bytes_received}}}};
}

MessageTransport::Channel make_channel(const asio::any_io_executor& executor, const ArqOptions& o, udp::socket socket,
                                       std::optional<udp::endpoint> peer,
                                       net::MessageChannel::MessageHandler on_message) {
  if (o.protocol == "sctp")
    return std::make_unique<arq::SctpChannel>(executor, std::move(socket), peer, std::move(on_message));
  const ArqConfigs c = make_configs(o);
  return std::make_unique<arq::ArqChannel>(executor, std::move(socket), peer, c.sender, c.receiver,
                                           std::move(on_message), c.fec);
}

}  // namespace

MessageTransport::MessageTransport(Channel channel, const udp::endpoint& local)
    : channel_(std::move(channel)),
      interface_(std::visit([](const auto& c) -> net::MessageChannel* { return c.get(); }, channel_)),
      local_(local) {
  interface_->start();
}

std::string MessageTransport::refusal() const {
  const auto e = channel().error();
  return e ? e.message() : "send queue full";
}

std::string MessageTransport::protocol() const {
  return std::holds_alternative<std::unique_ptr<net::TcpMessageChannel>>(channel_) ? "tcp" : "udp";
}

std::uint64_t MessageTransport::datagrams_heard() const {
  return std::visit(Overloaded{[](const std::unique_ptr<arq::ArqChannel>& c) {
                                 const auto& e = c->endpoint();
                                 return e.receiver().stats().packets_received + e.receiver().stats().bad_packets +
                                        e.sender().stats().acks_received + e.fec_decoder().stats().repairs_received;
                               },
                               [](const std::unique_ptr<arq::SctpChannel>& c) { return c->stats().datagrams_received; },
                               [](const std::unique_ptr<net::TcpMessageChannel>&) { return std::uint64_t{0}; }},
                    channel_);
}

boost::json::object MessageTransport::report() const {
  return std::visit(Overloaded{[](const std::unique_ptr<arq::ArqChannel>& c) { return arq_report(*c); },
                               [](const std::unique_ptr<arq::SctpChannel>& c) { return sctp_report(*c); },
                               [](const std::unique_ptr<net::TcpMessageChannel>& c) { return tcp_report(*c); }},
                    channel_);
}

std::unique_ptr<MessageTransport> connect_transport(const asio::any_io_executor& executor, const ArqOptions& o,
                                                    const udp::endpoint& to,
                                                    net::MessageChannel::MessageHandler on_message) {
  if (o.protocol == "tcp") {
    tcp::socket socket(executor);
    socket.connect(tcp::endpoint(to.address(), to.port()));
    const auto local = socket.local_endpoint();
    return std::make_unique<MessageTransport>(
        std::make_unique<net::TcpMessageChannel>(std::move(socket), std::move(on_message),
                                                 net::TcpMessageChannel::Options{.max_message_size = kMaxMessageSize}),
        udp::endpoint(local.address(), local.port()));
  }
  udp::socket socket(executor, udp::endpoint(to.protocol(), 0));
  const auto local = socket.local_endpoint();
  return std::make_unique<MessageTransport>(make_channel(executor, o, std::move(socket), to, std::move(on_message)),
                                            local);
}

std::unique_ptr<MessageTransport> listen_transport(const asio::any_io_executor& executor, const ArqOptions& o,
                                                   const udp::endpoint& at,
                                                   net::MessageChannel::MessageHandler on_message) {
  if (o.protocol == "tcp") {
    tcp::acceptor acceptor(executor, tcp::endpoint(at.address(), at.port()));
    const auto local = acceptor.local_endpoint();
    return std::make_unique<MessageTransport>(
        std::make_unique<net::TcpMessageChannel>(std::move(acceptor), std::move(on_message),
                                                 net::TcpMessageChannel::Options{.max_message_size = kMaxMessageSize}),
        udp::endpoint(local.address(), local.port()));
  }
  udp::socket socket(executor, at);
  const auto local = socket.local_endpoint();
  return std::make_unique<MessageTransport>(
      make_channel(executor, o, std::move(socket), std::nullopt, std::move(on_message)), local);
}

}  // namespace volley::tools
