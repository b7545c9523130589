#include <volley/netem/udp_relay.hpp>

#include <spdlog/spdlog.h>

namespace volley::netem {

namespace asio = boost::asio;
using asio::ip::udp;

namespace {
constexpr std::size_t kMaxDatagram = 65536;
}

UdpRelay::UdpRelay(asio::io_context& loop, const udp::endpoint& listen, const udp::endpoint& forward,
                   const Impairment& up, const Impairment& down, std::uint64_t seed)
    : loop_(loop),
      listen_(loop, listen),
      forward_(forward),
      buffer_(kMaxDatagram),
      core_(
          loop, up, down, seed,
          [this](Departure& d) {
            boost::system::error_code ec;
            sessions_[d.tag]->upstream.send(asio::buffer(d.bytes), 0, ec);
            if (ec) errors_.send_failures += 1;
          },
          [this](Departure& d) {
            boost::system::error_code ec;
            listen_.send_to(asio::buffer(d.bytes), sessions_[d.tag]->client, 0, ec);
            if (ec) errors_.send_failures += 1;
          }) {
  listen_.non_blocking(true);
}

void UdpRelay::start() { receive_from_clients(); }

void UdpRelay::stop() {
  stopped_ = true;
  core_.stop();
  boost::system::error_code ignored;
  listen_.close(ignored);
  for (auto& s : sessions_) s->upstream.close(ignored);
}

std::size_t UdpRelay::session_for(const udp::endpoint& client) {
  if (auto it = by_client_.find(client); it != by_client_.end()) return it->second;
  auto session = std::make_unique<Session>(Session{client, udp::socket(loop_), std::vector<std::byte>(kMaxDatagram)});
  session->upstream.open(forward_.protocol());
  session->upstream.non_blocking(true);
  session->upstream.connect(forward_);
  const std::size_t index = sessions_.size();
  sessions_.push_back(std::move(session));
  by_client_.emplace(client, index);
  spdlog::info("netem: new client {}:{} (relayed from local port {})", client.address().to_string(), client.port(),
               sessions_[index]->upstream.local_endpoint().port());
  receive_from_upstream(index);
  return index;
}

void UdpRelay::receive_from_clients() {
  listen_.async_receive_from(asio::buffer(buffer_), sender_, [this](const boost::system::error_code& ec, std::size_t n) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      errors_.receive_errors += 1;  // e.g. ICMP unreachable reported on the socket
    } else {
      const std::size_t tag = session_for(sender_);
      core_.submit_up(std::vector<std::byte>(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n)), tag);
    }
    receive_from_clients();
  });
}

void UdpRelay::receive_from_upstream(std::size_t index) {
  Session& s = *sessions_[index];
  s.upstream.async_receive(asio::buffer(s.buffer), [this, index](const boost::system::error_code& ec, std::size_t n) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    Session& session = *sessions_[index];
    if (ec) {
      errors_.receive_errors += 1;  // connection refused: nothing listens at the forward address yet
    } else {
      core_.submit_down(
          std::vector<std::byte>(session.buffer.begin(), session.buffer.begin() + static_cast<std::ptrdiff_t>(n)),
          index);
    }
    receive_from_upstream(index);
  });
}

}  // namespace volley::netem
