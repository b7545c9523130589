#include "arq_transport.hpp"

#include <deque>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <fmt/core.h>

#include <volley/arq/sctp_channel.hpp>
#include <volley/arq/udp_channel.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/error.hpp>

#include <volley/net/close_without_cancel.hpp>

namespace volley::tools {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;

namespace {

class ArqTransport final : public MessageTransport {
 public:
  ArqTransport(const asio::any_io_executor& executor, const ArqOptions& o, udp::socket socket,
               std::optional<udp::endpoint> peer, MessageHandler on_message) {
    const ArqConfigs c = make_configs(o);
    channel_ = std::make_unique<arq::ArqChannel>(executor, std::move(socket), peer, c.sender, c.receiver,
                                                 std::move(on_message), c.fec);
    channel_->start();
  }
  bool send(std::span<const std::byte> m) override { return channel_->send(m); }
  void close(Done done) override { channel_->close(std::move(done)); }
  void on_peer_finished(Done done) override { channel_->on_peer_finished(std::move(done)); }
  void stop() override { channel_->stop(); }
  std::string error() const override {
    return channel_->sender().failed() ? channel_->sender().error().message() : std::string("send buffer full");
  }
  std::string protocol() const override { return "udp"; }
  udp::endpoint local_endpoint() const override { return channel_->local_endpoint(); }
  std::uint64_t datagrams_heard() const override {
    const auto& e = channel_->endpoint();
    return e.receiver().stats().packets_received + e.receiver().stats().bad_packets + e.sender().stats().acks_received +
           e.fec_decoder().stats().repairs_received;
  }
  boost::json::object report() const override {
    const auto& e = channel_->endpoint();
    const auto& s = e.sender().stats();
    const auto& r = e.receiver().stats();
    boost::json::object o{
        {"foreign_datagrams", channel_->stats().foreign_datagrams},
        {"kernel_drops", channel_->kernel_drops()},
        {"send_failures", channel_->udp_stats().send_failures},  // datagrams the kernel refused: losses
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

 private:
  std::unique_ptr<arq::ArqChannel> channel_;
};

class SctpTransport final : public MessageTransport {
 public:
  SctpTransport(const asio::any_io_executor& executor, udp::socket socket, std::optional<udp::endpoint> peer,
                MessageHandler on_message)
      : channel_(executor, std::move(socket), peer, std::move(on_message)) {
    channel_.start();
  }
  bool send(std::span<const std::byte> m) override { return channel_.send(m); }
  void close(Done done) override { channel_.close(std::move(done)); }
  void on_peer_finished(Done done) override { channel_.on_peer_finished(std::move(done)); }
  void stop() override { channel_.stop(); }
  void on_ready(Done ready) override { channel_.on_connected(std::move(ready)); }
  std::string error() const override { return channel_.error() ? channel_.error().message() : "send queue full"; }
  std::string protocol() const override { return "udp"; }
  udp::endpoint local_endpoint() const override { return channel_.local_endpoint(); }
  std::uint64_t datagrams_heard() const override { return channel_.stats().datagrams_received; }
  boost::json::object report() const override {
    const auto& s = channel_.stats();
    return {{"sctp", boost::json::object{{"messages_sent", s.messages_sent},
                                         {"messages_received", s.messages_received},
                                         {"datagrams_sent", s.datagrams_sent},
                                         {"datagrams_received", s.datagrams_received},
                                         {"bytes_sent", s.bytes_sent},
                                         {"retransmitted_chunks", s.retransmissions},
                                         {"shutdown_aborts", s.shutdown_aborts},
                                         {"foreign_datagrams", s.foreign_datagrams}}},
            {"kernel_drops", channel_.kernel_drops()}};
  }

 private:
  arq::SctpChannel channel_;
};

// Length-prefixed messages over one TCP connection: [length u32 BE][message].
class TcpTransport final : public MessageTransport {
 public:
  TcpTransport(const asio::any_io_executor& executor, MessageHandler on_message)
      : socket_(executor), on_message_(std::move(on_message)) {}

  void connect(const udp::endpoint& to) {
    socket_.connect(tcp::endpoint(to.address(), to.port()));
    socket_.set_option(tcp::no_delay(true));
    read();
  }
  void listen(const udp::endpoint& at) {
    acceptor_ = std::make_unique<tcp::acceptor>(socket_.get_executor(), tcp::endpoint(at.address(), at.port()));
    acceptor_->async_accept(socket_, [this](const boost::system::error_code& ec) {
      if (ec || stopped_) return;
      socket_.set_option(tcp::no_delay(true));
      read();
      write();
    });
  }

  bool send(std::span<const std::byte> m) override {
    if (error_ || closing_) return false;
    std::vector<std::byte> framed(4 + m.size());
    wire::store_u32_be(framed.data(), static_cast<std::uint32_t>(m.size()));
    std::copy(m.begin(), m.end(), framed.begin() + 4);
    queue_.push_back(std::move(framed));
    write();
    return true;
  }
  void close(Done done) override {
    close_done_ = std::move(done);
    closing_ = true;
    if (error_) return finish();
    write();
  }
  void on_peer_finished(Done done) override {
    peer_done_ = std::move(done);
    if (peer_finished_ || error_) std::exchange(peer_done_, nullptr)(error_);
  }
  void stop() override {
    // What completes after this (an accept, read or write woken by the close) is ignored.
    stopped_ = true;
    if (acceptor_) net::close_without_cancel(*acceptor_);
    net::close_without_cancel(socket_);
  }
  std::string error() const override { return error_ ? error_.message() : "closed"; }
  std::uint64_t datagrams_heard() const override { return 0; }
  std::string protocol() const override { return "tcp"; }
  udp::endpoint local_endpoint() const override {
    const auto e = acceptor_ ? acceptor_->local_endpoint() : socket_.local_endpoint();
    return {e.address(), e.port()};
  }
  boost::json::object report() const override {
    return {{"tcp", boost::json::object{{"bytes_sent", bytes_sent_}, {"bytes_received", bytes_received_}}}};
  }

 private:
  void fail(const std::error_code& why) {
    if (!error_) error_ = why;
    if (peer_done_) std::exchange(peer_done_, nullptr)(error_);
    finish();
  }
  void finish() {
    if (close_done_) std::exchange(close_done_, nullptr)(error_);
  }
  void write() {
    if (writing_ || !socket_.is_open() || (acceptor_ && !accepted())) return;
    if (queue_.empty()) {
      if (closing_ && !shut_down_) {
        shut_down_ = true;
        boost::system::error_code ignored;
        socket_.shutdown(tcp::socket::shutdown_send, ignored);  // the peer reads to the end, then closes
        if (peer_finished_) finish();
      }
      return;
    }
    writing_ = true;
    asio::async_write(socket_, asio::buffer(queue_.front()), [this](const boost::system::error_code& ec, std::size_t n) {
      writing_ = false;
      if (stopped_) return;
      if (ec) return fail(ec);
      bytes_sent_ += n;
      queue_.pop_front();
      write();
    });
  }
  bool accepted() const {
    boost::system::error_code ec;
    socket_.remote_endpoint(ec);
    return !ec;
  }
  void read() {
    asio::async_read(socket_, asio::buffer(length_), [this](const boost::system::error_code& ec, std::size_t) {
      if (stopped_) return;
      if (ec == asio::error::eof) {
        peer_finished_ = true;
        if (peer_done_) std::exchange(peer_done_, nullptr)({});
        if (shut_down_) finish();  // both ends said they are done
        return;
      }
      if (ec) return fail(ec);
      // The length is the peer's word: never allocate more than a message can be.
      const std::uint32_t n = wire::load_u32_be(length_.data());
      if (n > kMaxMessageSize) {
        fail(wire::make_error_code(wire::Errc::length_over_maximum));  // the connection closes
        net::close_without_cancel(socket_);  // a write may be in flight: it fails, and error_ is set
        return;
      }
      frame_.resize(n);
      asio::async_read(socket_, asio::buffer(frame_), [this](const boost::system::error_code& ec2, std::size_t m) {
        if (stopped_) return;
        if (ec2) return fail(ec2);  // end of file: the peer closed in the middle of a message
        bytes_received_ += 4 + m;
        on_message_(frame_);
        read();
      });
    });
  }

  tcp::socket socket_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  MessageHandler on_message_;
  Done close_done_, peer_done_;
  std::deque<std::vector<std::byte>> queue_;
  std::array<std::byte, 4> length_{};
  std::vector<std::byte> frame_;
  std::uint64_t bytes_sent_ = 0, bytes_received_ = 0;
  std::error_code error_;
  bool writing_ = false, closing_ = false, shut_down_ = false, peer_finished_ = false, stopped_ = false;
};

}  // namespace

std::unique_ptr<MessageTransport> connect_transport(const asio::any_io_executor& executor, const ArqOptions& o,
                                                    const udp::endpoint& to,
                                                    MessageTransport::MessageHandler on_message) {
  if (o.protocol == "tcp") {
    auto t = std::make_unique<TcpTransport>(executor, std::move(on_message));
    t->connect(to);
    return t;
  }
  udp::socket socket(executor, udp::endpoint(to.protocol(), 0));
  if (o.protocol == "sctp")
    return std::make_unique<SctpTransport>(executor, std::move(socket), to, std::move(on_message));
  return std::make_unique<ArqTransport>(executor, o, std::move(socket), to, std::move(on_message));
}

std::unique_ptr<MessageTransport> listen_transport(const asio::any_io_executor& executor, const ArqOptions& o,
                                                   const udp::endpoint& at,
                                                   MessageTransport::MessageHandler on_message) {
  if (o.protocol == "tcp") {
    auto t = std::make_unique<TcpTransport>(executor, std::move(on_message));
    t->listen(at);
    return t;
  }
  udp::socket socket(executor, at);
  if (o.protocol == "sctp")
    return std::make_unique<SctpTransport>(executor, std::move(socket), std::nullopt, std::move(on_message));
  return std::make_unique<ArqTransport>(executor, o, std::move(socket), std::nullopt, std::move(on_message));
}

}  // namespace volley::tools
