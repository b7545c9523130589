#include <volley/netem/udp_relay.hpp>

#include <cstring>

#include <spdlog/spdlog.h>


namespace volley::netem {

namespace asio = boost::asio;
using asio::ip::udp;

namespace {
constexpr std::size_t kMaxDatagram = 65536;
constexpr std::size_t kBatch = 32;

net::UdpEndpointOptions endpoint_options(std::shared_ptr<net::UdpReceiveBuffers> buffers) {
  net::UdpEndpointOptions o;
  o.batch = kBatch;
  o.max_datagram = kMaxDatagram;
  o.receive_buffers = std::move(buffers);
  return o;
}

std::uint64_t make_tag(std::size_t slot, std::uint32_t generation) {
  return (std::uint64_t{generation} << 32) | slot;
}

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

UdpRelay::UdpRelay(const asio::any_io_executor& executor, const udp::endpoint& listen, const udp::endpoint& forward,
                   const Impairment& up, const Impairment& down, std::uint64_t seed, RelayLimits limits)
    : executor_(executor),
      buffers_(std::make_shared<net::UdpReceiveBuffers>(kBatch, kMaxDatagram)),
      listen_(executor, listen, endpoint_options(buffers_)),
      forward_(forward),
      limits_(limits),
      sweep_(executor),
      core_(
          executor, up, down, seed,
          [this](Departure& d) {
            Session* s = session_of(d.tag);
            if (s == nullptr) return;
            if (capture_) record_departure(true, d);
            s->upstream->send(d.bytes);  // leaves with the others of this loop turn
          },
          [this](Departure& d) {
            Session* s = session_of(d.tag);
            if (s == nullptr) return;
            if (capture_) record_departure(false, d);
            listen_.send(d.bytes, s->client);
          }) {}

void UdpRelay::start() {
  listen_.start([this](std::span<const std::byte> datagram, const udp::endpoint& from) { from_client(datagram, from); });
  arm_sweep();
}

void UdpRelay::stop() {
  stopped_ = true;
  core_.stop();
  sweep_.cancel();
  const net::UdpDropTable drops = net::UdpDropTable::read();  // the last counts, one read for every socket
  listen_.stop(drops);
  for (auto& s : slots_)
    if (s->upstream) s->upstream->stop(drops);
}

namespace {
void add_to(net::UdpEndpointStats& sum, const net::UdpEndpointStats& s) {
  sum.datagrams_received += s.datagrams_received;
  sum.bytes_received += s.bytes_received;
  sum.receive_calls += s.receive_calls;
  sum.datagrams_sent += s.datagrams_sent;
  sum.bytes_sent += s.bytes_sent;
  sum.send_calls += s.send_calls;
  sum.send_failures += s.send_failures;
  sum.truncated += s.truncated;
  sum.receive_errors += s.receive_errors;
}
}  // namespace

void UdpRelay::close_counting(net::UdpEndpoint& endpoint, const net::UdpDropTable& drops) {
  endpoint.stop(drops);  // what is queued leaves first; the drop count is kept
  closed_socket_drops_ += endpoint.kernel_drops();
  add_to(closed_totals_, endpoint.stats());
}

net::UdpEndpointStats UdpRelay::socket_totals() const {
  net::UdpEndpointStats sum = closed_totals_;
  add_to(sum, listen_.stats());
  for (const auto& s : slots_)
    if (s->live && s->upstream) add_to(sum, s->upstream->stats());
  return sum;
}

RelayErrors UdpRelay::errors() const {
  const net::UdpEndpointStats s = socket_totals();
  return {s.send_failures, s.receive_errors + s.truncated};
}

std::uint64_t UdpRelay::kernel_drops() {
  const net::UdpDropTable table = net::UdpDropTable::read();  // once for every socket
  std::uint64_t n = closed_socket_drops_ + listen_.kernel_drops(table);
  for (auto& s : slots_)
    if (s->live && s->upstream) n += s->upstream->kernel_drops(table);
  return n;
}

UdpRelay::Session* UdpRelay::session_of(std::uint64_t tag) {
  const auto slot = static_cast<std::size_t>(tag & 0xFFFFFFFFu);
  const auto generation = static_cast<std::uint32_t>(tag >> 32);
  Session* s = slot < slots_.size() ? slots_[slot].get() : nullptr;
  if (s == nullptr || !s->live || s->generation != generation) {
    counts_.orphaned += 1;
    return nullptr;
  }
  return s;
}

std::optional<std::uint64_t> UdpRelay::session_for(const udp::endpoint& client) {
  const auto now = std::chrono::steady_clock::now();
  if (auto it = by_client_.find(client); it != by_client_.end()) {
    Session& s = *slots_[it->second];
    s.last_active = now;
    return make_tag(it->second, s.generation);
  }
  if (by_client_.size() >= limits_.max_clients) expire_idle();
  const auto refuse = [&](const std::string& why) -> std::optional<std::uint64_t> {
    // Warn on the first refusal and then every 1000th: a flood must not flood the log.
    if (counts_.refused++ % 1000 == 0)
      spdlog::warn("netem: datagram from new client {}:{} dropped: {} ({} refused so far)",
                   client.address().to_string(), client.port(), why, counts_.refused);
    return std::nullopt;
  };
  if (by_client_.size() >= limits_.max_clients) return refuse(fmt::format("{} clients already", limits_.max_clients));

  udp::socket socket(executor_);
  boost::system::error_code ec;
  socket.open(forward_.protocol(), ec);
  if (!ec) socket.non_blocking(true, ec);
  if (!ec) socket.connect(forward_, ec);
  if (ec) return refuse("no upstream socket: " + ec.message());
  auto upstream = std::make_unique<net::UdpEndpoint>(std::move(socket), endpoint_options(buffers_));

  std::size_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = slots_.size();
    slots_.push_back(std::make_unique<Session>());
  }
  Session& s = *slots_[slot];
  s.client = client;
  s.upstream = std::move(upstream);
  s.live = true;
  s.last_active = now;
  by_client_.emplace(client, slot);
  counts_.opened += 1;
  spdlog::debug("netem: new client {}:{} (relayed from local port {})", client.address().to_string(), client.port(),
                s.upstream->local_endpoint().port());
  const std::uint64_t tag = make_tag(slot, s.generation);
  s.upstream->start([this, tag](std::span<const std::byte> datagram, const udp::endpoint&) {
    // Connected to the forward side: nothing else reaches this socket.
    Session* live = session_of(tag);
    if (live == nullptr) return;
    live->last_active = std::chrono::steady_clock::now();
    core_.submit_down(std::vector<std::byte>(datagram.begin(), datagram.end()), tag);
  });
  return tag;
}

void UdpRelay::forget(std::size_t slot, const net::UdpDropTable& drops) {
  Session& s = *slots_[slot];
  close_counting(*s.upstream, drops);  // the endpoint object goes when the slot is reused
  s.live = false;
  s.generation += 1;
  by_client_.erase(s.client);
  free_slots_.push_back(slot);
}

void UdpRelay::expire_idle() {
  const auto cutoff = std::chrono::steady_clock::now() - limits_.client_idle;
  std::vector<std::size_t> idle;
  for (const auto& [client, slot] : by_client_)
    if (slots_[slot]->last_active < cutoff) idle.push_back(slot);
  if (idle.empty()) return;
  // Their last drop counts, from one read of the kernel's table for them all.
  const net::UdpDropTable drops = net::UdpDropTable::read();
  for (const std::size_t slot : idle) forget(slot, drops);
  counts_.expired += idle.size();
}

void UdpRelay::arm_sweep() {
  sweep_.expires_after(std::max(std::chrono::milliseconds(10), limits_.client_idle / 4));
  sweep_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    expire_idle();
    arm_sweep();
  });
}

void UdpRelay::capture_to(PcapWriter& writer) {
  capture_ = &writer;
  // Arrivals: client -> relay on the way up, forward side -> relay's upstream socket on the way down.
  core_.set_arrival_observer([this](bool up, std::span<const std::byte> bytes, std::uint64_t tag, const Admission& a) {
    const Session& s = *slots_[tag & 0xFFFFFFFFu];  // arriving now: its session is live
    const auto packet = up ? ip_udp_packet(s.client, listen_.local_endpoint(), bytes)
                           : ip_udp_packet(forward_, s.upstream->local_endpoint(), bytes);
    capture_->write(PcapWriter::Interface::received, packet, capture_comment(a));
  });
}

void UdpRelay::record_departure(bool up, const Departure& d) {
  const Session& s = *slots_[d.tag & 0xFFFFFFFFu];  // checked live by the sink
  const auto packet = up ? ip_udp_packet(s.upstream->local_endpoint(), forward_, d.bytes)
                         : ip_udp_packet(listen_.local_endpoint(), s.client, d.bytes);
  capture_->write(PcapWriter::Interface::sent, packet, capture_comment(d));
}

void UdpRelay::from_client(std::span<const std::byte> datagram, const udp::endpoint& client) {
  if (stopped_) return;
  if (const auto tag = session_for(client)) core_.submit_up(std::vector<std::byte>(datagram.begin(), datagram.end()), *tag);
}

}  // namespace volley::netem
