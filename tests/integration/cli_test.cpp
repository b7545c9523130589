// The command lines: bad arguments get a clear message and a non-zero exit.
#include <iterator>
#include <map>
// GCC 12 at -O1 (the sanitizer builds) warns that libstdc++'s own regex
// automaton may use a moved-from std::function uninitialized: a false
// positive inside <regex>, silenced there alone.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#pragma GCC diagnostic pop
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

// Every program and subcommand.
const std::vector<std::vector<std::string>> kPrograms{
    {"volley", "target"},       {"volley", "gen"},          {"volley", "netem"},       {"volley", "netem", "tun"},
    {"volley", "arq-send"},     {"volley", "arq-recv"},     {"volley", "arq-bench"},   {"volley", "arq-sim"},
    {"volley", "rpc-server"},   {"volley", "rpc-bench"},    {"volley", "pingpong-server"},
    {"volley", "pingpong"},     {"volley", "echo-server"},  {"volley", "echo-client"}, {"volley", "session-load"},
    {"traffic_generator"}};

Result help_of(std::vector<std::string> program) {
  program.push_back("--help");
  return run(program);
}

// One option of a --help: "  -b, --bind ADDRESS   Address to listen on [default: 127.0.0.1]",
// its description perhaps on the next lines.
struct HelpOption {
  std::string short_name;   // "-b", or empty
  std::string name;         // "--bind"
  std::string value;        // "ADDRESS"; empty for a flag
  std::string description;  // the rest, lines joined
  std::string text;         // all of it
};

std::vector<HelpOption> help_options(const std::string& help) {
  const std::regex head(R"(^  (?:(-\w), )?(--[a-z][a-z0-9-]*)(?: (\S+(?: \.\.\.)?))?(?:\s+(.*))?$)");
  std::vector<HelpOption> options;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, head)) {
      if (m[2] == "--help") continue;
      options.push_back({m[1], m[2], m[3], m[4], line});
    } else if (!options.empty() && line.starts_with("     ") && line.find_first_not_of(' ') != std::string::npos) {
      const std::string more = line.substr(line.find_first_not_of(' '));
      HelpOption& last = options.back();
      last.description += last.description.empty() ? more : " " + more;
      last.text += " " + more;
    }
  }
  return options;
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
                           "--heartbeat", "--heartbeat-misses", "--design", "--metrics"})
    EXPECT_NE(target.out.find(flag), std::string::npos) << flag;
  const Result gen = run({"traffic_generator", "--help"});
  EXPECT_EQ(gen.code, 0);
  for (const char* flag : {"-m", "-t", "--address", "--port", "--connections", "--rate", "--random-payload",
                           "--allow-invalid", "--json", "--heartbeat"})
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
      {{"-m", "1001:64:100", "-t", "-1"}, "--duration: -1 is out of range"},
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
  for (const char* flag : {"--bind", "--port", "--forward", "--up", "--down", "--seed", "--json", "tun"})
    EXPECT_NE(netem.out.find(flag), std::string::npos) << flag;
  const Result send = run({"volley", "arq-send", "--help"});
  EXPECT_EQ(send.code, 0);
  for (const char* flag : {"--address", "--port", "--protocol", "--window", "--count", "--every", "--size", "--rto"})
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
  const Result no_port = run({"volley", "arq-send", "--count", "1"});
  EXPECT_EQ(no_port.code, 2);
  EXPECT_NE(no_port.err.find("--port is required"), std::string::npos) << no_port.err;
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
  for (const char* flag : {"--connections", "--duration", "--rate", "--heartbeat", "--framing", "--tls", "--json"})
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  const Result no_heartbeats = run({"volley", "session-load", "--heartbeat", "0"});
  EXPECT_EQ(no_heartbeats.code, 2);
  EXPECT_NE(no_heartbeats.err.find("--heartbeat must be above 0"), std::string::npos) << no_heartbeats.err;
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

// Every duration flag of every program refuses what is not a finite duration in
// its documented range, with a message naming the flag, and a non-zero exit.
// Before the one duration check (tools/volley/duration_flag.hpp), "nan" passed
// every range check: --handshake-timeout nan turned the handshake deadline
// off, --shutdown-timeout nan aborted every connection and logged
// "-9223372036854775808 ms", and netem --duration 1e10 overflowed into a
// deadline already past and exited at once with status 0. The flags are found
// in each program's --help, so a duration flag added later without the check
// fails here too.
TEST(Cli, EveryDurationFlagRefusesNanInfinityNegativeAndHuge) {
  int checked = 0;
  for (const auto& program : kPrograms) {
    const Result help = help_of(program);
    ASSERT_EQ(help.code, 0) << program.back();
    for (const HelpOption& o : help_options(help.out)) {
      if (o.value != "DURATION") continue;
      const std::string where = program.back() + " " + o.name;
      // NaN at every flag (what the range checks let through); the other
      // refusals once, at the first flag: each start of a sanitizer build costs
      // about a second.
      const std::vector<std::string> values = checked == 0
                                                  ? std::vector<std::string>{"nan", "inf", "-1", "1e12", "5parsecs", "ms"}
                                                  : std::vector<std::string>{"nan"};
      for (const std::string& bad : values) {
        auto with = program;
        with.insert(with.end(), {o.name, bad});
        const Result r = run(with);
        EXPECT_NE(r.code, 0) << where << " " << bad;
        EXPECT_NE(r.code, -1) << where << " " << bad << ": still running after 30 s";
        EXPECT_NE(r.err.find(o.name), std::string::npos) << where << " " << bad << ": " << r.err;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 18) << "fewer duration flags found than the programs have";
}

// The one convention of every program's flags (docs/TOOLS.md, "Conventions"),
// read from each one's --help, so a flag added later that departs from it
// fails here:
// - a server names where it listens with -b/--bind ADDRESS and -p/--port PORT,
//   a client the server it connects to with -a/--address ADDRESS and
//   -p/--port PORT; both default to 127.0.0.1; never both in one program;
// - a ready program writes its port with --port-file (never also --ready-file);
// - a duration is one DURATION value (250ms, 1.5s, 2min; a bare number is
//   seconds): no flag carries its unit in its name (--x-ms, --seconds) and a
//   flag named like a duration takes one;
// - the value is named by what it is or lists its choices, never with the
//   parser's type text; the default is shown once, as "[default: X]" at the
//   end of the description.
TEST(Cli, EveryProgramsHelpFollowsTheFlagConvention) {
  const std::regex parser_text(R"(\b(INT|UINT|FLOAT|TEXT|ENUM|BOOLEAN|REQUIRED)\b|\{(true|false)\}| in \[| in \{|->|OR \{)");
  const std::regex named_like_a_duration("(timeout|duration|idle|heartbeat|every|rto|lost-after)$");
  const std::regex unit_in_name("-(ms|us|s|sec|secs|seconds|millis)$|^--(seconds|time|interval|timeout)$");
  const std::regex default_anywhere("default", std::regex::icase);
  const std::regex default_at_end(R"( \[default: [^\]]+\]$)");
  int options = 0;
  for (const auto& program : kPrograms) {
    const Result help = help_of(program);
    ASSERT_EQ(help.code, 0) << program.back();
    const std::string name = program.size() > 1 ? program[1] + (program.size() > 2 ? " " + program[2] : "") : program[0];
    std::map<std::string, HelpOption> by_name;
    for (const HelpOption& o : help_options(help.out)) {
      ++options;
      by_name[o.name] = o;
      const std::string where = name + " " + o.name;
      EXPECT_FALSE(std::regex_search(o.text, parser_text)) << where << ": parser type text in: " << o.text;
      EXPECT_FALSE(std::regex_search(o.name, unit_in_name)) << where << ": a unit in the flag's name";
      if (std::regex_search(o.name, named_like_a_duration)) {
        EXPECT_EQ(o.value, "DURATION") << where << " is named like a duration: " << o.text;
      }
      const auto defaults = std::distance(std::sregex_iterator(o.text.begin(), o.text.end(), default_anywhere),
                                          std::sregex_iterator());
      EXPECT_LE(defaults, 1) << where << ": the default said more than once: " << o.text;
      if (defaults == 1) {
        EXPECT_TRUE(std::regex_search(o.description, default_at_end))
            << where << ": the default is not \"[default: X]\" at the end: " << o.text;
      }
    }
    for (const char* gone : {"--listen", "--to", "--host", "--heartbeat-ms", "--idle-timeout-ms", "--seconds"})
      EXPECT_EQ(by_name.count(gone), 0u) << name << " shows the old spelling " << gone;
    EXPECT_FALSE(by_name.count("--port-file") && by_name.count("--ready-file")) << name << ": two ready files";
    const bool server = by_name.count("--bind") > 0, client = by_name.count("--address") > 0;
    EXPECT_FALSE(server && client) << name << ": both --bind and --address";
    if (server || client) {
      const HelpOption& address = by_name[server ? "--bind" : "--address"];
      EXPECT_EQ(address.short_name, server ? "-b" : "-a") << name;
      EXPECT_EQ(address.value, "ADDRESS") << name;
      EXPECT_TRUE(address.description.ends_with("[default: 127.0.0.1]")) << name << ": " << address.text;
      ASSERT_EQ(by_name.count("--port"), 1u) << name;
      EXPECT_EQ(by_name["--port"].short_name, "-p") << name;
      EXPECT_EQ(by_name["--port"].value, "PORT") << name;
    }
  }
  EXPECT_GE(options, 250) << "fewer options read than the programs have";
}
