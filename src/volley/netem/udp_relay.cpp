#include <volley/netem/udp_relay.hpp>

#include <cstring>

#include <spdlog/spdlog.h>

namespace volley::netem {

namespace asio = boost::asio;
using asio::ip::udp;

namespace {
constexpr std::size_t kMaxDatagram = 65536;

void put16(std::vector<std::byte>& out, std::size_t at, std::uint32_t v) {
  out[at] = static_cast<std::byte>(v >> 8);
  out[at + 1] = static_cast<std::byte>(v);
}

// The datagram as the wire carried it: an IPv4 (or IPv6) header, a UDP header
// (checksum 0: "none" in IPv4; captures of IPv6 show it unverified), the payload.
std::vector<std::byte> ip_udp_packet(const udp::endpoint& from, const udp::endpoint& to,
                                     std::span<const std::byte> payload) {
  const bool v6 = from.address().is_v6() || to.address().is_v6();
  const std::size_t ip = v6 ? 40 : 20, udp_length = 8 + payload.size();
  std::vector<std::byte> p(ip + udp_length);
  if (v6) {
    p[0] = std::byte{0x60};
    put16(p, 4, static_cast<std::uint32_t>(udp_length));
    p[6] = std::byte{17};
    p[7] = std::byte{64};
    const auto as_v6 = [](const asio::ip::address& a) { return a.is_v6() ? a.to_v6() : asio::ip::make_address_v6(asio::ip::v4_mapped, a.to_v4()); };
    const auto src = as_v6(from.address()).to_bytes(), dst = as_v6(to.address()).to_bytes();
    std::memcpy(p.data() + 8, src.data(), 16);
    std::memcpy(p.data() + 24, dst.data(), 16);
  } else {
    p[0] = std::byte{0x45};
    put16(p, 2, static_cast<std::uint32_t>(ip + udp_length));
    p[6] = std::byte{0x40};  // don't fragment
    p[8] = std::byte{64};
    p[9] = std::byte{17};
    const auto src = from.address().to_v4().to_bytes(), dst = to.address().to_v4().to_bytes();
    std::memcpy(p.data() + 12, src.data(), 4);
    std::memcpy(p.data() + 16, dst.data(), 4);
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < 20; i += 2) sum += (std::to_integer<std::uint32_t>(p[i]) << 8) | std::to_integer<std::uint32_t>(p[i + 1]);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    put16(p, 10, ~sum & 0xFFFF);
  }
  put16(p, ip, from.port());
  put16(p, ip + 2, to.port());
  put16(p, ip + 4, static_cast<std::uint32_t>(udp_length));
  std::memcpy(p.data() + ip + 8, payload.data(), payload.size());
  return p;
}
}  // namespace

void UdpRelay::capture_to(PcapWriter& writer) {
  capture_ = &writer;
  // Arrivals: client -> relay on the way up, forward side -> relay's upstream socket on the way down.
  core_.set_arrival_observer([this](bool up, std::span<const std::byte> bytes, std::uint64_t tag, const Admission& a) {
    const Session& s = *sessions_[tag];
    boost::system::error_code ec;
    const auto packet = up ? ip_udp_packet(s.client, listen_.local_endpoint(ec), bytes)
                           : ip_udp_packet(forward_, s.upstream.local_endpoint(ec), bytes);
    capture_->write(PcapWriter::Interface::received, packet, capture_comment(a));
  });
}

void UdpRelay::record_departure(bool up, const Departure& d) {
  const Session& s = *sessions_[d.tag];
  boost::system::error_code ec;
  const auto packet = up ? ip_udp_packet(s.upstream.local_endpoint(ec), forward_, d.bytes)
                         : ip_udp_packet(listen_.local_endpoint(ec), s.client, d.bytes);
  capture_->write(PcapWriter::Interface::sent, packet, capture_comment(d));
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
            if (capture_) record_departure(true, d);
            boost::system::error_code ec;
            sessions_[d.tag]->upstream.send(asio::buffer(d.bytes), 0, ec);
            if (ec) errors_.send_failures += 1;
          },
          [this](Departure& d) {
            if (capture_) record_departure(false, d);
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
