// The command lines: bad arguments get a clear message and a non-zero exit.
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.hpp"
#include "raw_client.hpp"
#include "target_fixture.hpp"

using namespace volley::test;

namespace {

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result run(const std::vector<std::string>& argv) {
  TempDir dir;
  std::vector<std::string> full{bin(argv[0])};
  full.insert(full.end(), argv.begin() + 1, argv.end());
  ChildProcess p(full, dir.file("p"));
  const int code = p.wait_for(std::chrono::seconds(30)).value_or(-1);
  return {code, p.stdout_text(), p.stderr_text()};
}

}  // namespace

TEST(Cli, HelpListsEveryCommandAndFlag) {
  const Result top = run({"volley", "--help"});
  EXPECT_EQ(top.code, 0);
  EXPECT_NE(top.out.find("target"), std::string::npos);
  EXPECT_NE(top.out.find("gen"), std::string::npos);
  EXPECT_NE(top.out.find("session-load"), std::string::npos);
  EXPECT_NE(top.out.find("I/O backend of this build: "), std::string::npos) << top.out;
  const Result target = run({"volley", "target", "--help"});
  EXPECT_EQ(target.code, 0);
  for (const char* flag : {"--port", "--threads", "--handler", "--reply", "--json", "--no-progress", "--port-file",
                           "--heartbeat-ms", "--heartbeat-misses", "--design", "--metrics"})
    EXPECT_NE(target.out.find(flag), std::string::npos) << flag;
  const Result gen = run({"traffic_generator", "--help"});
  EXPECT_EQ(gen.code, 0);
  for (const char* flag : {"-m", "-t", "--host", "--port", "--connections", "--rate", "--random-payload",
                           "--allow-invalid", "--json", "--heartbeat-ms"})
    EXPECT_NE(gen.out.find(flag), std::string::npos) << flag;
}

// Every long-running server program runs in either design and serves its metrics.
TEST(Cli, EveryServerProgramOffersBothDesignsAndAMetricsEndpoint) {
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"volley", "target"}, {"volley", "echo-server"}, {"volley", "pingpong-server"},
        {"volley", "rpc-server"}, {"volley", "netem"}, {"volley", "netem", "tun"}, {"volley", "arq-recv"}}) {
    std::vector<std::string> argv = command;
    argv.push_back("--help");
    const Result help = run(argv);
    EXPECT_EQ(help.code, 0) << argv[1];
    for (const char* text : {"--design", "loop-per-thread|thread-pool", "--metrics"})
      EXPECT_NE(help.out.find(text), std::string::npos) << argv[1] << " " << (argv.size() > 3 ? argv[2] : "") << ": "
                                                        << text;
  }
}

TEST(Cli, GeneratorRejectsBadSpecsClearly) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases{
      {{"-m", "1001:64:25", "-m", "8001:1500:50"}, "add up to 75, not 100"},
      {{"-m", "1001:65:100"}, "must be 4 to 64 bytes"},
      {{"-m", "8001:65537:100"}, "must be 0 to 65536 bytes"},
      {{"-m", "1005:10:100"}, "not a gNB message type"},
      {{"-m", "1001-64-100"}, "expected TYPE:SIZE:FRACTION"},
      {{"-m", "zz:64:100"}, "TYPE must be a 16-bit hex number"},
      {{"-m", "1001:x:100"}, "SIZE must be a decimal"},
      {{"-m", "1001:64:0"}, "FRACTION must be a whole number from 1 to 100"},
      {{"-m", "1001:64:100", "-t", "-1"}, "-t"},
      {{"-m", "1001:64:100", "--connections", "0"}, "connections"},
      {{"-m", "1001:64:100", "--bogus"}, "--bogus"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv{"traffic_generator"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const Result r = run(argv);
    EXPECT_NE(r.code, 0) << c.says;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << "stderr: " << r.err;
  }
}

TEST(Cli, GeneratorSaysWhenNoTargetListens) {
  TempDir dir;
  int free_port = 0;
  {
    RunningTarget t(dir, {"--threads", "1"});
    free_port = t.port();
    t.stop();
  }
  const Result r = run({"volley", "gen", "-m", "1001:64:100", "-t", "1", "--port", std::to_string(free_port)});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot connect"), std::string::npos) << r.err;
}

TEST(Cli, TargetRejectsBadFlagsAndATakenPort) {
  EXPECT_NE(run({"volley", "target", "--handler", "fast"}).code, 0);
  EXPECT_NE(run({"volley", "target", "--reply", "maybe"}).code, 0);
  EXPECT_NE(run({"volley", "target", "--threads", "0"}).code, 0);
  EXPECT_NE(run({"volley"}).code, 0);
  TempDir dir;
  RunningTarget first(dir, {"--threads", "1"});
  const Result second = run({"volley", "target", "--bind", "127.0.0.1", "--port", std::to_string(first.port())});
  EXPECT_EQ(second.code, 1);
  EXPECT_NE(second.err.find("cannot listen"), std::string::npos) << second.err;
  first.stop();
}

TEST(Cli, NetemAndArqToolsDescribeTheirFlagsAndRefuseBadOnes) {
  const Result netem = run({"volley", "netem", "--help"});
  EXPECT_EQ(netem.code, 0);
  for (const char* flag : {"--listen", "--forward", "--up", "--down", "--seed", "--json", "tun"})
    EXPECT_NE(netem.out.find(flag), std::string::npos) << flag;
  const Result send = run({"volley", "arq-send", "--help"});
  EXPECT_EQ(send.code, 0);
  for (const char* flag : {"--to", "--protocol", "--window", "--count", "--interval", "--size", "--timeout"})
    EXPECT_NE(send.out.find(flag), std::string::npos) << flag;
  const Result bench = run({"volley", "arq-bench", "--help"});
  EXPECT_EQ(bench.code, 0);
  for (const char* text : {"--scenario", "--variant", "sctp", "sr+fec=K:M", "sr+fec=adaptive", "--no-tcp", "--no-sctp"})
    EXPECT_NE(bench.out.find(text), std::string::npos) << text;

  const Result bad_protocol = run({"volley", "arq-send", "--to", "127.0.0.1:9", "--protocol", "xyz", "--count", "1"});
  EXPECT_EQ(bad_protocol.code, 2);
  EXPECT_NE(bad_protocol.err.find("--protocol must be"), std::string::npos) << bad_protocol.err;
  const Result bad_size = run({"volley", "arq-send", "--to", "127.0.0.1:9", "--size", "8", "--count", "1"});
  EXPECT_EQ(bad_size.code, 2);
  EXPECT_NE(bad_size.err.find("--size must be"), std::string::npos) << bad_size.err;
  // A negative count used to wrap to 2^64 - 5 and send until the buffer filled.
  for (const char* count : {"-5", "0"}) {
    const Result bad_count = run({"volley", "arq-send", "--to", "127.0.0.1:9", "--count", count});
    EXPECT_NE(bad_count.code, 0) << count;
    EXPECT_NE(bad_count.err.find("--count"), std::string::npos) << bad_count.err;
  }
  EXPECT_NE(run({"volley", "arq-recv"}).code, 0);  // --listen is required
  EXPECT_NE(run({"volley", "arq-bench", "--scenario", "9"}).code, 0);

  for (const char* flag : {"--fec", "--echo", "--drain-timeout"}) EXPECT_NE(send.out.find(flag), std::string::npos) << flag;
  EXPECT_NE(send.out.find("sctp"), std::string::npos);
  for (const auto& [fec, protocol, says] :
       {std::tuple{"4:0", "sr", "--fec: FEC K must be"}, std::tuple{"x", "sr", "--fec: FEC must be K:M"},
        std::tuple{"4:1", "tcp", "--fec goes with the ARQ schemes"}, std::tuple{"4:1", "sctp", "--fec goes with"}}) {
    const Result bad_fec = run({"volley", "arq-send", "--to", "127.0.0.1:9", "--protocol", protocol, "--fec", fec});
    EXPECT_EQ(bad_fec.code, 2) << fec << " " << protocol;
    EXPECT_NE(bad_fec.err.find(says), std::string::npos) << bad_fec.err;
  }
  const Result bad_variant = run({"volley", "arq-bench", "--variant", "sr+fec=99:1", "--no-tcp"});
  EXPECT_EQ(bad_variant.code, 2);
  EXPECT_NE(bad_variant.err.find("FEC K must be"), std::string::npos) << bad_variant.err;
  const Result sim_tcp = run({"volley", "arq-sim", "--variant", "tcp"});
  EXPECT_EQ(sim_tcp.code, 2);
  EXPECT_NE(sim_tcp.err.find("ARQ variants only"), std::string::npos) << sim_tcp.err;
}

// The virtual-clock simulation is deterministic: the same seed gives the same
// table, byte for byte, and every message of every run arrives.
TEST(Cli, ArqSimIsDeterministicAndDeliversEverything) {
  const std::vector<std::string> args{"volley", "arq-sim", "--scenario", "3", "5", "--seeds", "2", "--json"};
  const Result first = run(args);
  const Result second = run(args);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
  const auto runs = boost::json::parse(first.out).as_array();
  EXPECT_EQ(runs.size(), 2u * (3 + 4));  // scenario 3: three variants, 5: four; two seeds each
  for (const auto& r : runs) {
    const auto& o = r.as_object();
    EXPECT_EQ(boost::json::value_to<std::string>(o.at("error")), "");
    EXPECT_EQ(u64(o.at("delay").at("count")), u64(o.at("count")));
  }
}

TEST(Cli, SessionLoadDescribesItsFlagsAndRefusesBadOnes) {
  const Result help = run({"volley", "session-load", "--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* flag : {"--connections", "--seconds", "--rate", "--heartbeat-ms", "--framing", "--tls", "--json"})
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  const Result no_heartbeats = run({"volley", "session-load", "--heartbeat-ms", "0"});
  EXPECT_EQ(no_heartbeats.code, 2);
  EXPECT_NE(no_heartbeats.err.find("--heartbeat-ms must be above 0"), std::string::npos) << no_heartbeats.err;
  EXPECT_NE(run({"volley", "session-load", "--connections", "0"}).code, 0);
  EXPECT_NE(run({"volley", "session-load", "--rate", "-1"}).code, 0);
  // Nobody listening: says so and exits 1 (the port of a target that has stopped).
  TempDir dir;
  int free_port = 0;
  {
    RunningTarget t(dir, {"--threads", "1"});
    free_port = t.port();
    t.stop();
  }
  const Result nobody = run({"volley", "session-load", "-p", std::to_string(free_port), "-c", "3", "-z", "1"});
  EXPECT_EQ(nobody.code, 1);
  EXPECT_NE(nobody.err.find("cannot connect"), std::string::npos) << nobody.err;
}

// Every duration flag of every program refuses what is not a finite number in
// its documented range, with a message naming the flag, and a non-zero exit.
// Before the one duration check (tools/volley/duration_flag.hpp), "nan" passed
// every range check: --handshake-timeout nan turned the handshake deadline
// off, --shutdown-timeout nan aborted every connection and logged
// "-9223372036854775808 ms", and netem --duration 1e10 overflowed into a
// deadline already past and exited at once with status 0. The flags are found
// in each program's --help, so a duration flag added later without the check
// fails here too.
TEST(Cli, EveryDurationFlagRefusesNanInfinityNegativeAndHuge) {
  const std::vector<std::vector<std::string>> programs{
      {"volley", "target"},       {"volley", "gen"},          {"volley", "netem"},       {"volley", "netem", "tun"},
      {"volley", "arq-send"},     {"volley", "arq-recv"},     {"volley", "arq-bench"},   {"volley", "arq-sim"},
      {"volley", "rpc-server"},   {"volley", "rpc-bench"},    {"volley", "pingpong-server"},
      {"volley", "pingpong"},     {"volley", "echo-server"},  {"volley", "echo-client"}, {"volley", "session-load"},
      {"traffic_generator"}};
  // "  -z,--seconds FLOAT:0.01 to 2592000 seconds=1  Seconds of ..."
  const std::regex option(R"(^\s+(?:-\w,)?(--[a-z][a-z-]*) FLOAT(:[^=\s]*(?: [^=\s]+)*)?)");
  const std::regex duration_name("(timeout|duration|seconds|interval|idle|time)$");
  int checked = 0;
  for (const auto& program : programs) {
    auto argv = program;
    argv.push_back("--help");
    const Result help = run(argv);
    ASSERT_EQ(help.code, 0) << argv[1];
    std::istringstream lines(help.out);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, option) || !std::regex_search(m[1].str(), duration_name)) continue;
      const std::string flag = m[1];
      const std::string where = program.back() + " " + flag;
      const std::string range = m[2];
      EXPECT_TRUE(range.ends_with(" seconds") || range.ends_with(" ms"))
          << where << ": a duration flag without the duration check (help: " << line << ")";
      // NaN at every flag (what the range checks let through); the other
      // refusals once, at the first flag: each start of a sanitizer build costs
      // about a second.
      const std::vector<std::string> values =
          checked == 0 ? std::vector<std::string>{"nan", "inf", "-1", "1e12"} : std::vector<std::string>{"nan"};
      for (const std::string& bad : values) {
        auto with = program;
        with.insert(with.end(), {flag, bad});
        const Result r = run(with);
        EXPECT_NE(r.code, 0) << where << " " << bad;
        EXPECT_NE(r.code, -1) << where << " " << bad << ": still running after 30 s";
        EXPECT_NE(r.err.find(flag), std::string::npos) << where << " " << bad << ": " << r.err;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 18) << "fewer duration flags found than the programs have";
}
