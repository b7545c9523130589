// The abuse matrix for the UDP programs: the echo server, the ARQ receiver
// and the netem relay (in front of an ARQ receiver), each sent garbage,
// empty and oversized datagrams and datagrams from hundreds of sources while
// a good client works alongside. For each: the program is still up after the
// abuse, its memory under a bound, the good client's result exact (the ARQ
// transfer delivers every message once, intact, in order; the echo returns
// every datagram intact, or the loss is in a kernel drop counter), it stops
// cleanly with its report, and what its report can tell of the abuse is counted.
// The abuse is paced (a few thousand datagrams a second): a flood would test
// the kernel's receive buffer, which `Echo.UdpDatagramsTheKernelDroppedAreCounted`
// and the relay's own tests already do.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "adversarial.hpp"
#include "child_process.hpp"
#include "listening_server.hpp"
#include "target_fixture.hpp"
#include "udp_helpers.hpp"

namespace volley::test {
namespace {

using namespace std::chrono_literals;
using Report = boost::json::object;

constexpr int kArqMessages = 3000;  // one a millisecond: the transfer outlasts every abuse

struct UdpSubject {
  std::string name;
  std::vector<std::string> backend;  // a program the subject forwards to (after `volley`); empty: none
  // The subject's arguments (after `volley`), given the backend's port.
  std::function<std::vector<std::string>(int backend_port)> server;
  std::function<std::vector<std::string>(int port)> good_client;
  // The good client's report against the subject's and the backend's (empty without one).
  std::function<void(int client_exit, const Report& client, const Report& server, const Report& backend)> check;
  // What the report shows of the abuse named; nullopt where it cannot tell.
  std::function<std::optional<std::uint64_t>(const Report& server, const std::string& abuse)> counted;
};

std::vector<std::string> arq_send(int port) {
  return {bin("volley"), "arq-send", "--to",     "127.0.0.1:" + std::to_string(port),
          "--count",     std::to_string(kArqMessages), "--interval", "1", "--size", "200", "--json"};
}

void expect_every_message_delivered(int client_exit, const Report& receiver) {
  EXPECT_EQ(client_exit, 0);
  EXPECT_EQ(u64(receiver.at("delay").at("count")), static_cast<std::uint64_t>(kArqMessages));
  EXPECT_EQ(u64(receiver.at("damaged_messages")), 0u);
  EXPECT_EQ(receiver.at("error").as_string(), "");
}

std::vector<UdpSubject> subjects() {
  return {
      {"echo-server", {},
       [](int) { return std::vector<std::string>{"echo-server", "--proto", "udp", "--port", "0", "--json", "--no-progress"}; },
       [](int port) {
         return std::vector<std::string>{bin("volley"), "echo-client", "--proto", "udp", "-p", std::to_string(port), "-c",
                                         "2", "-m", "1", "-s", "100", "-z", "2", "--json", "--no-progress",
                                         // A server descheduled on busy CPUs is not a loss (see Echo.UdpEchoesEveryDatagram).
                                         "--loss-timeout", "5000"};
       },
       [](int client_exit, const Report& client, const Report& server, const Report&) {
         EXPECT_EQ(u64(client.at("mismatched_bytes")), 0u) << "an echo carried someone else's bytes";
         EXPECT_GT(u64(client.at("total_messages")), 0u);
         // UDP may lose; what it lost must be where the kernel counts it.
         if (u64(client.at("lost")) > 0) {
           EXPECT_GT(u64(server.at("kernel_drops")), 0u) << "datagrams lost and counted nowhere";
         } else {
           EXPECT_EQ(client_exit, 0);
         }
       },
       [](const Report&, const std::string&) -> std::optional<std::uint64_t> { return std::nullopt; }},
      {"arq-recv", {},
       [](int) { return std::vector<std::string>{"arq-recv", "--listen", "127.0.0.1:0", "--json"}; },
       arq_send,
       [](int client_exit, const Report&, const Report& server, const Report&) {
         expect_every_message_delivered(client_exit, server);
       },
       [](const Report& r, const std::string&) -> std::optional<std::uint64_t> {
         return u64(r.at("foreign_datagrams"));  // not the sender's: heard and ignored
       }},
      {"netem", {"arq-recv", "--listen", "127.0.0.1:0", "--json"},
       [](int backend) {
         // Sources over 64 are refused until idle ones are forgotten (after 1 s): a good
         // client that comes after the abusers retransmits until it gets a place.
         return std::vector<std::string>{"netem", "--listen", "127.0.0.1:0", "--forward",
                                         "127.0.0.1:" + std::to_string(backend), "--max-clients", "64",
                                         "--client-idle", "1", "--json", "--no-progress"};
       },
       arq_send,
       [](int client_exit, const Report&, const Report&, const Report& backend) {
         expect_every_message_delivered(client_exit, backend);
       },
       [](const Report& r, const std::string& abuse) -> std::optional<std::uint64_t> {
         // A relay forwards any bytes; it can only tell sources over its limit.
         if (abuse != "many_sources") return std::nullopt;
         return u64(r.at("clients").at("refused"));
       }},
  };
}

// ---- the abuses ----

struct UdpAbuse {
  std::string name;
  bool must_be_counted;
  std::function<void(int port)> run;
};

std::vector<UdpAbuse> udp_abuses() {
  return {
      {"garbage", true,
       [](int port) {
         const UdpSocket socket;
         for (unsigned i = 0; i < 2000; ++i) {
           const Bytes bytes = garbage(1 + (i * 7919) % 512, i);
           socket.send_to(port, bytes);
           if (i % 2 == 1) std::this_thread::sleep_for(1ms);
         }
       }},
      {"empty", true,
       [](int port) {
         const UdpSocket socket;
         for (int i = 0; i < 200; ++i) {
           socket.send_to(port, {});
           std::this_thread::sleep_for(1ms);
         }
       }},
      {"oversized", true,
       [](int port) {
         const UdpSocket socket;
         const Bytes big = garbage(65507, 7);  // the most a UDP datagram over IPv4 carries
         for (int i = 0; i < 20; ++i) {
           socket.send_to(port, big);
           std::this_thread::sleep_for(20ms);
         }
       }},
      {"many_sources", true,
       [](int port) {
         std::vector<std::unique_ptr<UdpSocket>> sources;
         for (unsigned i = 0; i < 300; ++i) {
           sources.push_back(std::make_unique<UdpSocket>());
           sources.back()->send_to(port, garbage(64, i));
           std::this_thread::sleep_for(1ms);
         }
       }},
  };
}

struct Case {
  std::string subject;
  UdpAbuse abuse;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.subject << " x " << c.abuse.name; }

std::vector<Case> every_case() {
  std::vector<Case> cases;
  for (const auto& s : subjects())
    for (const auto& a : udp_abuses()) cases.push_back({s.name, a});
  return cases;
}

// The ARQ receiver ends by itself once its transfer is over and the sender
// quiet (a signal before that is an interrupted transfer); the others stop on one.
Report finish(ListeningServer& program, bool ends_by_itself) {
  if (!ends_by_itself) return program.stop();
  const auto code = program.process().wait_for(30s);
  if (!code) {
    ADD_FAILURE() << "still running 30 s after its sender ended";
    return program.stop();
  }
  EXPECT_EQ(*code, 0) << program.process().stderr_text();
  return boost::json::parse(report_text(program.process().stdout_text())).as_object();
}

class AbusedOverUdp : public testing::TestWithParam<Case> {};

TEST_P(AbusedOverUdp, StaysUpBoundedAndExactForAGoodClientAlongside) {
  UdpSubject subject;
  for (auto& s : subjects())
    if (s.name == GetParam().subject) subject = s;
  const UdpAbuse& abuse = GetParam().abuse;
  TempDir dir;
  std::unique_ptr<ListeningServer> backend;
  if (!subject.backend.empty()) {
    backend = std::make_unique<ListeningServer>(dir, subject.backend, "backend");
    ASSERT_GT(backend->port(), 0);
  }
  ListeningServer server(dir, subject.server(backend ? backend->port() : 0), subject.name);
  ASSERT_GT(server.port(), 0);
  ChildProcess good(subject.good_client(server.port()), dir.file("good"));
  abuse.run(server.port());
  EXPECT_TRUE(server.running()) << subject.name << " went down (or ended early): " << server.process().stderr_text();
  EXPECT_LT(resident_kib(server.process().pid()), (kSanitizerBuild ? 768u : 200u) * 1024);

  const int code = good.wait_for(120s).value_or(-1);
  const std::string text = good.stdout_text();
  ASSERT_NE(text.find('{'), std::string::npos) << "the good client: " << good.stderr_text();
  const Report client = boost::json::parse(text.substr(text.find('{'))).as_object();
  const Report report = finish(server, subject.name == "arq-recv");
  const Report backend_report = backend ? finish(*backend, true) : Report{};
  subject.check(code, client, report, backend_report);
  if (abuse.must_be_counted) {
    if (const auto counted = subject.counted(report, abuse.name)) {
      EXPECT_GT(*counted, 0u) << "the abuse is in no counter: " << boost::json::serialize(report);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(UdpPrograms, AbusedOverUdp, testing::ValuesIn(every_case()), [](const auto& info) {
  return case_name(info.param.subject, info.param.abuse.name);
});

}  // namespace
}  // namespace volley::test
