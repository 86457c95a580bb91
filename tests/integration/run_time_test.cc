// `fingerprintd run` when line time and wall time disagree. vLLM headers carry
// `MM-DD HH:MM:SS`: no year, local time in a zone nobody states, from a
// clock that may be hours off. The daemon never compares a line's time with
// the wall clock directly; a deployment's event time is its latest line time
// moved on by the wall time elapsed since that line was read (README, "Run it
// live"). So whatever the offset, an incident with every worker is written
// promptly, and one missing a worker is written when its window has passed
// in wall time after its last line: not earlier, and not hours later.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>
#include <regex>

#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

using namespace run_harness;  // NOLINT(build/namespaces): test-only helpers
using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

const std::regex kHeaderTime(R"((\d\d)-(\d\d) (\d\d):(\d\d):(\d\d))");

int64_t HeaderSeconds(const std::smatch& m, int year) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = std::stoi(m[1]) - 1;
  tm.tm_mday = std::stoi(m[2]);
  tm.tm_hour = std::stoi(m[3]);
  tm.tm_min = std::stoi(m[4]);
  tm.tm_sec = std::stoi(m[5]);
  return static_cast<int64_t>(timegm(&tm));
}

std::string FormatHeader(int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof(out), "%m-%d %H:%M:%S", &tm);
  return out;
}

// `lines` with every `MM-DD HH:MM:SS` moved so that the last one reads
// `offset_s` from now (negative: the log's clock is behind the wall clock).
std::string ShiftTimes(const std::vector<std::string>& lines, int64_t offset_s) {
  std::time_t now = std::time(nullptr);
  std::tm today{};
  gmtime_r(&now, &today);
  const int year = today.tm_year + 1900;
  int64_t last = 0;
  for (const std::string& line : lines) {
    std::smatch m;
    if (std::regex_search(line, m, kHeaderTime)) last = HeaderSeconds(m, year);
  }
  const int64_t shift = static_cast<int64_t>(now) + offset_s - last;
  std::string out;
  for (const std::string& line : lines) {
    std::smatch m;
    if (std::regex_search(line, m, kHeaderTime)) {
      out += m.prefix().str() + FormatHeader(HeaderSeconds(m, year) + shift) + m.suffix().str();
    } else {
      out += line;
    }
    out += '\n';
  }
  return out;
}

std::vector<Json> IncidentsOf(const std::vector<Json>& lines, const std::string& rule) {
  std::vector<Json> out;
  for (const Json& j : lines) {
    if (j["rule"] == rule) out.push_back(j);
  }
  return out;
}

constexpr char kRule[] = "deepgemm-unknown-sf-transformation";

// The log clock's offset from the wall clock, in seconds.
class RunTimeTest : public RunFixture, public ::testing::WithParamInterface<int64_t> {};

TEST_P(RunTimeTest, AnIncidentOfEveryWorkerIsWrittenPromptlyWhateverTheLogClock) {
  auto daemon = Start();
  ASSERT_TRUE(WaitFor([&] { return StderrHas("running"); })) << Stderr();
  auto written = steady_clock::now();
  Append("w.log", ShiftTimes(lines_, GetParam()));
  // Without the wall clock moving a quiet deployment on, a log 3 h ahead
  // would wait 3 h for its watermark; the bound is seconds.
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); }, std::chrono::seconds(8))) << Stderr();
  auto elapsed = duration_cast<milliseconds>(steady_clock::now() - written);
  Stop(daemon);
  EXPECT_EQ(IncidentsOf(IncidentLines(), kRule).size(), 1u) << ReadFile(Incidents());
  RecordProperty("incident_after_ms", std::to_string(elapsed.count()));
}

TEST_P(RunTimeTest, AnIncidentMissingAWorkerIsWrittenWhenItsWindowHasPassedInWallTime) {
  // The rule's window cut to 3 s so the test is short; rank 0 fails, rank 1
  // (expected: tensor_parallel_size=2) never reports, and rank 0's exception
  // line is the last thing the deployment writes.
  constexpr auto kWindow = std::chrono::seconds(3);
  fs::copy(SourceDir() + "/rules", dir_ / "rules", fs::copy_options::recursive);
  fs::path rule = dir_ / "rules" / (std::string(kRule) + ".yaml");
  std::string text = ReadFile(rule);
  ASSERT_NE(text.find("window: 120s"), std::string::npos);
  text.replace(text.find("window: 120s"), 12, "window: 3s");
  std::ofstream(rule, std::ios::trunc) << text;
  std::vector<std::string> rank0_only;
  for (size_t i = 0; i < 112; ++i) {  // up to rank 0's exception line
    if (i >= 73 && lines_[i].find("Worker_TP1") != std::string::npos) continue;
    rank0_only.push_back(lines_[i]);
  }
  ASSERT_THAT(rank0_only.back(), ::testing::HasSubstr("Unknown SF transformation"));

  auto daemon = Start("beginning", {"--rules", (dir_ / "rules").string()});
  ASSERT_TRUE(WaitFor([&] { return StderrHas("running"); })) << Stderr();
  auto written = steady_clock::now();
  Append("w.log", ShiftTimes(rank0_only, GetParam()));
  ASSERT_TRUE(WaitFor([&] { return !IncidentsOf(IncidentLines(), kRule).empty(); },
                      std::chrono::seconds(15)))
      << Stderr();
  auto elapsed = duration_cast<milliseconds>(steady_clock::now() - written);
  Stop(daemon);
  std::vector<Json> incidents = IncidentsOf(IncidentLines(), kRule);
  ASSERT_EQ(incidents.size(), 1u) << ReadFile(Incidents());
  EXPECT_EQ(incidents[0]["workers"]["affected"], 1);
  EXPECT_EQ(incidents[0]["workers"]["expected"], 2);
  EXPECT_GE(elapsed, kWindow) << "closed before its window passed";
  EXPECT_LE(elapsed, kWindow + std::chrono::seconds(5)) << "stalled";
  RecordProperty("incident_after_ms", std::to_string(elapsed.count()));
}

INSTANTIATE_TEST_SUITE_P(LogClockOffsets, RunTimeTest, ::testing::Values(-3 * 3600, 0, 3 * 3600),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           int64_t h = info.param / 3600;
                           return h == 0  ? std::string("InStep")
                                  : h < 0 ? "Behind" + std::to_string(-h) + "h"
                                          : "Ahead" + std::to_string(h) + "h";
                         });

}  // namespace
}  // namespace fingerprintd::testing
