// Abuse against every TCP server program, as an attacker or a broken peer
// would: garbage, lying lengths, frames split byte by byte, resets in the
// middle of a frame, slowloris, a client that never reads, connection churn.
// Each runs while a well-behaved client does its normal work, and for each:
// the server stays up, its memory stays under a bound, the good client's
// results are exact, the abuse is counted where the protocol can tell, and
// the server still stops cleanly with its report.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <volley/gnb/protocol.hpp>
#include <volley/rpc/frame.hpp>
#include <volley/wire/byte_order.hpp>
#include <volley/wire/checked.hpp>

#include "child_process.hpp"
#include "listening_server.hpp"
#include "target_fixture.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;

// ---- the servers ----

struct Subject {
  std::string name;
  std::vector<std::string> server;  // after `volley`
  Bytes request;                    // one whole valid frame the server answers
  Bytes lying_header;               // a header whose length the server must refuse (empty: none)
  std::function<std::vector<std::string>(int port)> good_client;
  std::function<void(const boost::json::object& report)> check_good;
  // What the server's report shows of bad input and broken connections; nullopt
  // where the protocol cannot tell (an echo takes any bytes).
  std::function<std::optional<std::uint64_t>(const boost::json::object& report)> counted;
};

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

std::vector<Subject> subjects() {
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
  return {
      {"target",
       with({"target", "--bind", "127.0.0.1", "--port", "0", "--json", "--no-progress", "--reply", "ack"}),
       gnb_control(1), gnb_lie,
       [](int port) {
         return std::vector<std::string>{bin("traffic_generator"), "--port", std::to_string(port), "--json",
                                         "--no-progress", "-m", "1001:64:50", "-m", "8001:1200:50", "-t", "2"};
       },
       [](const boost::json::object& r) {
         EXPECT_EQ(u64(r.at("clean_connections")), 1u);
         std::uint64_t controls = 0;
         for (const auto& s : r.at("specs").as_array())
           if (s.at("type").as_string() == "0x1001") controls += u64(s.at("frames"));
         EXPECT_GT(controls, 0u);
         EXPECT_EQ(u64(r.at("replies").at("ack")), controls) << "every control message of the good client acked";
         EXPECT_EQ(u64(r.at("replies").at("unmatched")), 0u);
       },
       [](const boost::json::object& r) -> std::optional<std::uint64_t> {
         const auto& c = r.at("connections").as_object();
         return sum_of(r.at("protocol_errors").as_object()) + u64(c.at("closed_mid_frame")) +
                u64(c.at("closed_io_error")) + u64(c.at("closed_slow_consumer")) + u64(c.at("closed_protocol_error"));
       }},
      {"pingpong-server",
       with({"pingpong-server", "-p", "0", "--json", "--no-progress", "--heartbeat-ms", "0"}),
       checked_message(32), checked_lie,
       [](int port) {
         return std::vector<std::string>{bin("volley"), "pingpong", "-p", std::to_string(port), "-g", "1",
                                         "--sizes", "1,100,10000", "-n", "5000", "--json"};
       },
       [](const boost::json::object& r) {
         EXPECT_EQ(u64(r.at("mismatches")), 0u);
         for (const auto& row : r.at("results").as_array()) EXPECT_EQ(u64(row.at("messages")), 5000u);
       },
       [](const boost::json::object& r) -> std::optional<std::uint64_t> {
         return u64(r.at("protocol_errors")) + abnormal_closes(r.at("closes").as_object());
       }},
      {"rpc-server",
       with({"rpc-server", "--bind", "127.0.0.1", "--port", "0", "--json", "--heartbeat-ms", "0"}),
       rpc_ping(), rpc_lie,
       [](int port) {
         return std::vector<std::string>{bin("volley"), "rpc-bench", "--port", std::to_string(port), "--seconds",
                                         "1", "--json"};
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
       with({"echo-server", "--proto", "tcp", "--port", "0", "--json", "--no-progress"}),
       Bytes(32, std::byte{0x61}), {},
       [](int port) {
         return std::vector<std::string>{bin("volley"), "echo-client", "-p", std::to_string(port), "-c", "2", "-z",
                                         "2", "--json", "--no-progress"};
       },
       [](const boost::json::object& r) {
         EXPECT_EQ(u64(r.at("mismatched_bytes")), 0u);
         EXPECT_EQ(u64(r.at("errors")), 0u);
         EXPECT_EQ(u64(r.at("total_bytes")), u64(r.at("bytes_sent")));
       },
       [](const boost::json::object&) -> std::optional<std::uint64_t> { return std::nullopt; }},
  };
}

// ---- raw sockets that may be refused, reset or closed under them ----

class Abuser {
 public:
  explicit Abuser(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Abuser() { close(); }
  Abuser(const Abuser&) = delete;
  Abuser& operator=(const Abuser&) = delete;
  Abuser(Abuser&& o) noexcept : fd_(std::exchange(o.fd_, -1)), connected_(o.connected_) {}

  bool connected() const { return connected_; }
  // Sends what the socket takes without waiting; false once the peer is gone.
  bool send(std::span<const std::byte> bytes) {
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
  // At most `n` bytes that arrive within `wait`.
  std::size_t read_some(std::size_t n, std::chrono::milliseconds wait) {
    std::vector<std::byte> buf(n);
    std::size_t got = 0;
    const auto until = Clock::now() + wait;
    while (got < n && Clock::now() < until) {
      const ssize_t r = ::recv(fd_, buf.data() + got, n - got, MSG_DONTWAIT);
      if (r > 0) got += static_cast<std::size_t>(r);
      else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) break;
      else std::this_thread::sleep_for(1ms);
    }
    return got;
  }
  // RST instead of FIN.
  void reset() {
    const linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// ---- the abuses ----

struct Abuse {
  std::string name;
  bool must_be_counted;  // where the protocol can tell (Subject::counted)
  std::function<void(int port, const Subject&)> run;
};

Bytes garbage(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = std::byte{static_cast<unsigned char>(rng() & 0xFF)};
  // Never a valid header by chance: the first byte is one no protocol here starts a frame with.
  b[0] = std::byte{0xEE};
  return b;
}

std::vector<Abuse> abuses() {
  return {
      {"garbage", true,
       [](int port, const Subject&) {
         for (unsigned i = 0; i < 8; ++i) {
           Abuser a(port);
           a.send(garbage(64 * 1024, i));
           a.read_some(64 * 1024, 100ms);  // whatever comes back (an echo), or the close
         }
       }},
      {"lying_length", true,
       [](int port, const Subject& s) {
         const Bytes header = s.lying_header.empty() ? garbage(16, 99) : s.lying_header;
         for (int i = 0; i < 4; ++i) {
           Abuser a(port);
           Bytes bytes = header;
           bytes.resize(header.size() + 100, std::byte{0});
           a.send(bytes);
           a.read_some(1, 100ms);
         }
       }},
      {"split_byte_by_byte", false,
       [](int port, const Subject& s) {
         for (int i = 0; i < 3; ++i) {
           Abuser a(port);
           for (std::byte b : s.request) {
             a.send(std::span(&b, 1));
             std::this_thread::sleep_for(1ms);
           }
           // A frame that arrives a byte at a time is still one frame: it is answered.
           EXPECT_GT(a.read_some(1, 5000ms), 0u) << s.name << ": no answer to a frame sent byte by byte";
         }
       }},
      {"reset_mid_frame", true,
       [](int port, const Subject& s) {
         for (int i = 0; i < 8; ++i) {
           Abuser a(port);
           a.send(std::span(s.request).first(s.request.size() / 2));
           std::this_thread::sleep_for(5ms);
           a.reset();
         }
       }},
      {"slowloris", false,
       [](int port, const Subject& s) {
         std::vector<Abuser> slow;
         for (int i = 0; i < 100; ++i) slow.emplace_back(port);
         for (std::size_t byte = 0; byte < std::min<std::size_t>(10, s.request.size() - 1); ++byte) {
           for (auto& a : slow) a.send(std::span(s.request).subspan(byte, 1));
           std::this_thread::sleep_for(100ms);
         }
       }},
      {"never_reads", false,
       [](int port, const Subject& s) {
         Abuser a(port);
         Bytes burst;
         while (burst.size() < 256 * 1024) burst.insert(burst.end(), s.request.begin(), s.request.end());
         const auto until = Clock::now() + 1500ms;
         while (Clock::now() < until && a.send(burst)) {
         }
       }},
      {"connection_churn", false,
       [](int port, const Subject&) {
         for (int i = 0; i < 300; ++i) {
           Abuser a(port);
           if (i % 2 == 0) a.reset();
         }
       }},
  };
}

std::uint64_t resident_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

struct Case {
  Subject subject;
  Abuse abuse;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.subject.name << " x " << c.abuse.name; }

std::vector<Case> every_case() {
  std::vector<Case> cases;
  for (const auto& s : subjects())
    for (const auto& a : abuses()) cases.push_back({s, a});
  return cases;
}

class Abused : public testing::TestWithParam<Case> {};

TEST_P(Abused, StaysUpBoundedAndExactForAGoodClientAlongside) {
  const Subject& subject = GetParam().subject;
  const Abuse& abuse = GetParam().abuse;
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
  const auto counted = subject.counted(report);
  if (abuse.must_be_counted && counted) {
    EXPECT_GT(*counted, 0u) << "the abuse is in no counter: " << boost::json::serialize(report);
  }
}

INSTANTIATE_TEST_SUITE_P(Servers, Abused, testing::ValuesIn(every_case()), [](const auto& info) {
  std::string name = info.param.subject.name + "_" + info.param.abuse.name;
  for (auto& ch : name)
    if (ch == '-') ch = '_';
  return name;
});

}  // namespace
}  // namespace volley::test
