// The one way durations are written on every program's command line.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "duration_flag.hpp"

using volley::tools::add_duration_option;
using volley::tools::add_old_duration_alias;
using volley::tools::format_duration;
using volley::tools::parse_duration;

TEST(DurationFlag, ParsesANumberWithAUnitOrBareSeconds) {
  EXPECT_DOUBLE_EQ(*parse_duration("250ms"), 0.25);
  EXPECT_DOUBLE_EQ(*parse_duration("1.5s"), 1.5);
  EXPECT_DOUBLE_EQ(*parse_duration("2min"), 120.0);
  EXPECT_DOUBLE_EQ(*parse_duration("1h"), 3600.0);
  EXPECT_DOUBLE_EQ(*parse_duration("100us"), 1e-4);
  EXPECT_DOUBLE_EQ(*parse_duration("500ns"), 5e-7);
  EXPECT_DOUBLE_EQ(*parse_duration("3"), 3.0);
  EXPECT_DOUBLE_EQ(*parse_duration("0"), 0.0);
  for (const char* bad : {"", "ms", "5 ms", "5parsecs", "5m", "nan", "inf", "infs", "1e400", "1e308h", "--1s"})
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
}

TEST(DurationFlag, FormatsTheLargestWholeUnit) {
  EXPECT_EQ(format_duration(0), "0");
  EXPECT_EQ(format_duration(5), "5s");
  EXPECT_EQ(format_duration(0.25), "250ms");
  EXPECT_EQ(format_duration(60), "1min");
  EXPECT_EQ(format_duration(90), "90s");
  EXPECT_EQ(format_duration(86400), "1d");
  EXPECT_EQ(format_duration(7200), "2h");
  EXPECT_EQ(format_duration(0.0015), "1500us");
  for (const double seconds : {0.025, 1.5, 10.0, 3600.0, 2e-6})
    EXPECT_DOUBLE_EQ(*parse_duration(format_duration(seconds)), seconds) << seconds;
}

namespace {
// Parses `args` with a --wait option (seconds, 0.001 to 60) and --wait-ms, its
// old spelling in milliseconds; returns the parse error, or "" and sets `value`.
std::string parse(std::vector<std::string> args, double& value) {
  CLI::App app;
  add_duration_option(app, "--wait", value, "help", 0.001, 60);
  add_old_duration_alias(app, "--wait-ms", value, 1e-3, 0.001, 60);
  args.insert(args.begin(), "program");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return {};
}
}  // namespace

TEST(DurationFlag, StoresSecondsChecksTheRangeAndKeepsTheOldSpellingsUnit) {
  double value = 5;
  EXPECT_EQ(parse({"--wait", "250ms"}, value), "");
  EXPECT_DOUBLE_EQ(value, 0.25);
  EXPECT_EQ(parse({"--wait", "2"}, value), "");
  EXPECT_DOUBLE_EQ(value, 2.0);
  EXPECT_EQ(parse({"--wait-ms", "40"}, value), "");  // the old spelling: bare numbers are milliseconds
  EXPECT_DOUBLE_EQ(value, 0.04);
  EXPECT_EQ(parse({"--wait-ms", "1s"}, value), "");  // a unit says what it is
  EXPECT_DOUBLE_EQ(value, 1.0);
  EXPECT_EQ(parse({"--wait", "1ms"}, value), "");     // the lower limit itself
  for (const char* bad : {"2min", "0.5ms", "-1", "nan", "1e12", "soon"}) {
    const std::string error = parse({"--wait", bad}, value);
    EXPECT_NE(error.find("--wait"), std::string::npos) << bad << ": " << error;
  }
  EXPECT_NE(parse({"--wait", "2min"}, value).find("1ms to 1min"), std::string::npos);
}
