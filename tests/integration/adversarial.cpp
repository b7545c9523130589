// The abuse matrix's shared parts (adversarial.hpp).
#include "adversarial.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include <volley/gnb/protocol.hpp>
#include <volley/rpc/frame.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/checked.hpp>

#include "child_process.hpp"
#include "listening_server.hpp"
#include "target_fixture.hpp"

namespace volley::test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

std::uint64_t sum_of(const boost::json::object& o) {
  std::uint64_t n = 0;
  for (const auto& [key, value] : o)
    if (value.is_int64() || value.is_uint64()) n += boost::json::value_to<std::uint64_t>(value);
  return n;
}

// Session closes other than the peer's orderly end and our own stop.
std::uint64_t abnormal_closes(const boost::json::object& closes) {
  std::uint64_t n = sum_of(closes);
  for (const char* normal : {"peer closed", "shutdown", "closed locally"})
    if (const auto* v = closes.if_contains(normal)) n -= boost::json::value_to<std::uint64_t>(*v);
  return n;
}

Bytes gnb_control(std::uint32_t id) {
  Bytes body(64, std::byte{0x42});
  wire::store_u32_be(body.data(), id);
  Bytes frame(gnb::kHeaderSize + body.size());
  gnb::encode_frame(gnb::MessageType::control, body, frame);
  return frame;
}

Bytes checked_message(std::size_t size) {
  const Bytes payload(size, std::byte{0x5a});
  Bytes frame(wire::checked::kHeaderSize + size);
  std::error_code ec;
  wire::checked::encode(wire::checked::FrameType::message, payload, frame, ec);
  return frame;
}

Bytes rpc_ping() {
  Bytes frame(rpc::kHeaderSize + 8);
  rpc::write_header(frame.data(), 7, 8, 1);  // id 1: the benchmark's Ping, an 8-byte body
  return frame;
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

std::vector<std::string> subject_names() { return {"target", "pingpong-server", "rpc-server", "echo-server"}; }
std::vector<std::string> io_uring_subject_names() { return {"target-io-uring", "echo-server-io-uring"}; }

Subject subject(const std::string& name, Link link) {
  for (auto& s : subjects(link))
    if (s.name == name) return s;
  ADD_FAILURE() << "no subject " << name;
  return {};
}

std::vector<Subject> subjects(Link link) {
  const auto serve = server_flags(link);
  const auto connect = client_flags(link);
  std::vector<std::string> echo_serve{"--proto", "tcp"};
  std::vector<std::string> echo_connect;
  if (link == Link::tls) {
    const auto& certs = TestCerts::get();
    echo_serve = {"--proto", "tls", "--cert", certs.file("server.pem"), "--key", certs.file("server.key")};
    echo_connect = {"--proto", "tls", "--ca", certs.file("ca.pem")};
  }
  const std::vector<std::string> limits{"--max-queued", "262144", "--max-queued-timeout", "1"};
  auto with = [&](std::vector<std::string> argv) {
    argv.insert(argv.end(), limits.begin(), limits.end());
    return argv;
  };
  Bytes gnb_lie(gnb::kHeaderSize);
  gnb::write_header(gnb_lie.data(), 0x8001, 0x00100000);  // a length over 64 KiB: untrustworthy
  Bytes checked_lie(wire::checked::kHeaderSize);
  wire::store_u24_be(checked_lie.data(), 0xFFFFFF);  // 16 MiB, over the 1 MiB maximum
  Bytes rpc_lie(rpc::kHeaderSize);
  rpc::write_header(rpc_lie.data(), 9, 0x7FFFFFFF, 1);  // a body size over the 1 MiB maximum
  std::vector<Subject> list{
      {"target",
       with({"target", "--bind", "127.0.0.1", "--port", "0", "--json", "--no-progress", "--reply", "ack"}) + serve,
       gnb_control(1), gnb_lie,
       [connect](int port) {
         return std::vector<std::string>{bin("traffic_generator"), "--port", std::to_string(port), "--json",
                                         "--no-progress", "-m", "1001:64:50", "-m", "8001:1200:50", "-t", "2"} + connect;
       },
       [](const boost::json::object& r) {
         EXPECT_EQ(u64(r.at("clean_connections")), 1u);
         std::uint64_t controls = 0;
         for (const auto& s : r.at("specs").as_array())
           if (s.at("type").as_string() == "0x1001") controls += u64(s.at("frames"));
         EXPECT_GT(controls, 0u);
         EXPECT_EQ(u64(r.at("replies").at("ack")), controls) << "every control message of the good client acked";
         EXPECT_EQ(u64(r.at("replies").at("unmatched")), 0u);
         EXPECT_EQ(u64(r.at("replies").at("unanswered")), 0u) << "the generator's own count of the same";
       },
       [](const boost::json::object& r) -> std::optional<std::uint64_t> {
         const auto& c = r.at("connections").as_object();
         return sum_of(r.at("protocol_errors").as_object()) + u64(c.at("closed_mid_frame")) +
                u64(c.at("closed_io_error")) + u64(c.at("closed_slow_consumer")) + u64(c.at("closed_protocol_error"));
       }},
      {"pingpong-server",
       with({"pingpong-server", "-p", "0", "--json", "--no-progress", "--heartbeat-ms", "0"}) + serve,
       checked_message(32), checked_lie,
       [connect](int port) {
         return std::vector<std::string>{bin("volley"), "pingpong", "-p", std::to_string(port), "-g", "1",
                                         "--sizes", "1,100,10000", "-n", "5000", "--json"} + connect;
       },
       [](const boost::json::object& r) {
         EXPECT_EQ(u64(r.at("mismatches")), 0u);
         for (const auto& row : r.at("results").as_array()) EXPECT_EQ(u64(row.at("messages")), 5000u);
       },
       [](const boost::json::object& r) -> std::optional<std::uint64_t> {
         return u64(r.at("protocol_errors")) + abnormal_closes(r.at("closes").as_object());
       }},
      {"rpc-server",
       with({"rpc-server", "--bind", "127.0.0.1", "--port", "0", "--json", "--heartbeat-ms", "0"}) + serve,
       rpc_ping(), rpc_lie,
       [connect](int port) {
         return std::vector<std::string>{bin("volley"), "rpc-bench", "--port", std::to_string(port), "--seconds",
                                         "1", "--json"} + connect;
       },
       [](const boost::json::object& r) {
         for (const auto& row : r.at("results").as_array()) {
           EXPECT_EQ(row.at("error").as_string(), "");
           EXPECT_GT(u64(row.at("round_trips")), 0u);
         }
       },
       [](const boost::json::object& r) -> std::optional<std::uint64_t> {
         return u64(r.at("protocol_errors")) + u64(r.at("error_replies")) + abnormal_closes(r.at("closes").as_object());
       }},
      {"echo-server",
       with({"echo-server", "--port", "0", "--json", "--no-progress"}) + echo_serve,
       Bytes(32, std::byte{0x61}), {},
       [echo_connect](int port) {
         return std::vector<std::string>{bin("volley"), "echo-client", "-p", std::to_string(port), "-c", "2", "-z",
                                         "2", "--json", "--no-progress"} + echo_connect;
       },
       [](const boost::json::object& r) {
         EXPECT_EQ(u64(r.at("mismatched_bytes")), 0u);
         EXPECT_EQ(u64(r.at("errors")), 0u);
         EXPECT_EQ(u64(r.at("total_bytes")), u64(r.at("bytes_sent")));
       },
       [](const boost::json::object&) -> std::optional<std::uint64_t> { return std::nullopt; }},
  };
  if (link == Link::tcp) {
    for (const std::string name : {"target", "echo-server"}) {
      Subject s = *std::find_if(list.begin(), list.end(), [&](const Subject& each) { return each.name == name; });
      s.name += "-io-uring";
      s.server.insert(s.server.end(), {"--io", "uring"});
      list.push_back(std::move(s));
    }
  }
  return list;
}

std::string case_name(const std::string& subject, const std::string& abuse) {
  std::string name = subject + "_" + abuse;
  for (auto& ch : name)
    if (ch == '-') ch = '_';
  return name;
}

Bytes garbage(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = std::byte{static_cast<unsigned char>(rng() & 0xFF)};
  // Never a valid header by chance: the first byte is one no protocol here starts a frame with,
  // and no TLS record type.
  b[0] = std::byte{0xEE};
  return b;
}

Abuser::Abuser(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

Abuser::Abuser(Abuser&& o) noexcept : fd_(std::exchange(o.fd_, -1)), connected_(o.connected_) {}

bool Abuser::send(std::span<const std::byte> bytes) {
  std::size_t done = 0;
  const auto give_up = Clock::now() + 2s;
  while (done < bytes.size() && Clock::now() < give_up) {
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      std::this_thread::sleep_for(1ms);
    } else {
      return false;
    }
  }
  return done == bytes.size();
}

Bytes Abuser::read_bytes(std::size_t n, std::chrono::milliseconds wait) {
  Bytes buf(n);
  std::size_t got = 0;
  const auto until = Clock::now() + wait;
  while (got < n && Clock::now() < until) {
    const ssize_t r = ::recv(fd_, buf.data() + got, n - got, MSG_DONTWAIT);
    if (r > 0) got += static_cast<std::size_t>(r);
    else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) break;
    else std::this_thread::sleep_for(1ms);
  }
  buf.resize(got);
  return buf;
}

void Abuser::reset() {
  const linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close();
}

void Abuser::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void expect_survives(const Subject& subject, const Abuse& abuse,
                     const std::function<std::optional<std::uint64_t>(const boost::json::object&)>& counted) {
  TempDir dir;
  ListeningServer server(dir, subject.server, subject.name);
  ASSERT_GT(server.port(), 0);
  ChildProcess good(subject.good_client(server.port()), dir.file("good"));
  abuse.run(server.port(), subject);
  EXPECT_TRUE(server.running()) << subject.name << " went down: " << server.process().stderr_text();
  // (The sanitizers' runtime holds memory of its own: shadow, quarantine.)
  EXPECT_LT(resident_kib(server.process().pid()), (kSanitizerBuild ? 768u : 200u) * 1024);

  const auto code = good.wait_for(120s);
  ASSERT_EQ(code.value_or(-1), 0) << "the good client: " << good.stderr_text();
  subject.check_good(boost::json::parse(report_text(good.stdout_text())).as_object());
  const boost::json::object report = server.stop();
  const auto count = counted(report);
  if (abuse.must_be_counted && count) {
    EXPECT_GT(*count, 0u) << "the abuse is in no counter: " << boost::json::serialize(report);
  }
}

void expect_survives(const Subject& subject, const LayerAbuse& abuse) {
  if (abuse.in_handshake) {
    expect_survives(subject, abuse.abuse, [](const boost::json::object& r) -> std::optional<std::uint64_t> {
      return u64(r.at("handshake_failures"));
    });
  } else {
    expect_survives(subject, abuse.abuse, subject.counted);
  }
}

}  // namespace volley::test
