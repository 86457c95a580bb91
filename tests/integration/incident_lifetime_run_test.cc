// The incident lifetime as an operator meets it with the real daemon: a TP=2
// failure pages and stays open while the server stays down (long past the
// correlation window that used to close it), and closes as recovered when
// the same deployment starts healthy; a crash loop of five failing restarts
// is one incident with five occurrences and replay's id, also when the
// daemon is SIGKILLed and restarted in the middle of the loop.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include "testing/http_client.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

using namespace run_harness;

// uvicorn's line once vLLM's API server serves (after the engine is up).
constexpr const char* kHealthyStart =
    "\x1b[0;36m(APIServer pid=1)\x1b[0;0m INFO:     Application startup complete.\n";

class IncidentLifetimeRunTest : public RunFixture {
 protected:
  // The golden TP=2 failure as restart `attempt` of the pod writes it: the
  // same lines, `attempt` hours later (vLLM's "03-04 10:14:37" and glog's
  // "W0304 10:15:21" dates).
  std::string Attempt(int attempt) const {
    static const std::regex date("(03-04|0304) 10:");
    const std::string hour = "$1 " + std::to_string(10 + attempt) + ":";
    std::string out;
    for (const std::string& line : lines_) out += std::regex_replace(line, date, hour) + "\n";
    return out;
  }

  // The same lines `seconds` later (a restart under back-off, minutes apart).
  std::string Shifted(int seconds) const {
    static const std::regex date("(03-04 |0304 )(\\d\\d):(\\d\\d):(\\d\\d)");
    std::string out;
    for (const std::string& line : lines_) {
      std::string shifted;
      auto begin = std::sregex_iterator(line.begin(), line.end(), date);
      size_t at = 0;
      for (auto it = begin; it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        int t = std::stoi(m[2]) * 3600 + std::stoi(m[3]) * 60 + std::stoi(m[4]) + seconds;
        char hms[16];
        std::snprintf(hms, sizeof hms, "%02d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
        shifted += line.substr(at, m.position(0) - at) + m[1].str() + hms;
        at = m.position(0) + m.length(0);
      }
      out += shifted + line.substr(at) + "\n";
    }
    return out;
  }

  // The failure written after one misdated line: it is reported and stays
  // open two seconds on, the line is counted, and replay of the same bytes
  // gives the same open incident.
  void ExpectOpenWithOneMisdatedLine(std::unique_ptr<DaemonProcess>& daemon) {
    ASSERT_TRUE(WaitFor([&] { return HasOccurrences(1); })) << Stderr() << ReadFile(Incidents());
    std::this_thread::sleep_for(std::chrono::seconds(2));
    EXPECT_EQ(Latest().begin()->second.count("closed"), 0u) << ReadFile(Incidents());
    EXPECT_THAT(HttpGet(HttpPort(), "/metrics").body,
                ::testing::HasSubstr("fingerprintd_time_guessed_total{fallback=\"misdated\"} 1"));
    Stop(daemon);
    auto [id, occurrences, closed] = Replayed();
    EXPECT_EQ(id, Latest().begin()->first);
    EXPECT_EQ(closed, "open");
  }

  // The latest JSONL revision of each incident id.
  std::map<std::string, Json> Latest() const {
    std::map<std::string, Json> out;
    for (const Json& j : IncidentLines()) out[j["incident_id"].get<std::string>()] = j;
    return out;
  }
  bool HasOccurrences(int n) const {
    auto latest = Latest();
    return latest.size() == 1 && latest.begin()->second["occurrences"] == n &&
           latest.begin()->second["workers"]["affected"] == 2;
  }
  double WorkerFailures() const {
    double sum = 0;
    std::istringstream in(HttpGet(HttpPort(), "/metrics").body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("fingerprintd_worker_failures{", 0) == 0) {
        sum += std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    return sum;
  }

  // What replay of the same bytes says: (id, occurrences, closed).
  std::tuple<std::string, int, std::string> Replayed() const {
    auto result =
        ReplayPaths({(dir_ / "logs" / "vllm.log").string()}, "", {{"deployment", "qwen3"}});
    if (result.incidents.size() != 1) return {"", 0, "incidents: " + result.jsonl};
    const auto& i = result.incidents.front();
    return {i.incident_id, i.occurrences, std::string(correlate::CloseReasonName(i.closed))};
  }
};

TEST_F(IncidentLifetimeRunTest,
       AFailureStaysOpenPastManyWindowsAndClosesWhenTheServerStartsHealthy) {
  // A 2 s window: the old lifetime closed the incident 4 s after its last hit.
  auto daemon = StartWithConfig("correlation: {window: 2s}\n");
  ASSERT_TRUE(WaitFor([&] { return HttpPort() != 0; })) << Stderr();
  Append("vllm.log", Attempt(0));
  ASSERT_TRUE(WaitFor([&] { return HasOccurrences(1); })) << Stderr();
  ASSERT_TRUE(WaitFor([&] { return WorkerFailures() == 2; })) << Stderr();
  // 3 windows of silence in real time, past the 4 s the old lifetime closed
  // it after (30 windows in virtual time:
  // tests/source/file_source_test.cc).
  std::this_thread::sleep_for(std::chrono::seconds(6));
  EXPECT_EQ(Latest().begin()->second.count("closed"), 0u) << ReadFile(Incidents());
  EXPECT_EQ(WorkerFailures(), 2) << "both ranks' series stay 1 while the server is down";

  Append("vllm.log", kHealthyStart);
  ASSERT_TRUE(WaitFor([&] { return Latest().begin()->second.count("closed") == 1; }))
      << ReadFile(Incidents()) << Stderr();
  EXPECT_EQ(Latest().begin()->second["closed"], "recovered");
  EXPECT_TRUE(WaitFor([&] { return WorkerFailures() == 0; }));
  Stop(daemon);
  EXPECT_EQ(Replayed(), std::make_tuple(Latest().begin()->first, 1, std::string("recovered")));
}

TEST_F(IncidentLifetimeRunTest,
       ReplayOfAFailureThenHalfAnHourOfSilenceThenAHealthyStartIsRecovered) {
  Append("vllm.log", Attempt(0));
  Append("vllm.log",
         "\x1b[0;36m(APIServer pid=1)\x1b[0;0m INFO 03-04 10:45:40 [api_server.py:1885] vLLM API "
         "server version 0.11.2\n");
  Append("vllm.log", kHealthyStart);
  auto [id, occurrences, closed] = Replayed();
  EXPECT_EQ(id, ReplayIncidentId());
  EXPECT_EQ(occurrences, 1);
  EXPECT_EQ(closed, "recovered");
}

// Kubernetes' back-off restarts a failing pod 10, 20, 40 and 80 s after each
// failure: closer than the rule's window. Each start (its banner, new pids)
// is an attempt; replay of the same bytes counts the same five.
TEST_F(IncidentLifetimeRunTest, ACrashLoopUnderBackOffCountsEveryStartLiveAndInReplay) {
  auto daemon = Start();
  ASSERT_TRUE(WaitFor([&] { return HttpPort() != 0; })) << Stderr();
  int offset = 0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    Append("vllm.log", Shifted(offset));
    ASSERT_TRUE(WaitFor([&] { return HasOccurrences(attempt + 1); }))
        << "attempt " << attempt << "\n"
        << ReadFile(Incidents()) << Stderr();
    offset += 44 + (10 << attempt);  // the start-up to the failure, then the back-off
  }
  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 1u) << ReadFile(Incidents());
  int opened = 0;
  for (const Json& j : IncidentLines()) opened += j["revision"] == 1;
  EXPECT_EQ(opened, 1) << "paged once";
  Stop(daemon);
  EXPECT_EQ(Replayed(), std::make_tuple(latest.begin()->first, 5, std::string("open")));
}

// A line dated 2099 before the failure (a bad clock, a test message) must not
// move the deployment's time past max_age: the incident stays open, live and
// in replay, and the line is counted.
TEST_F(IncidentLifetimeRunTest, ALineDatedFarAheadBeforeTheFailureLeavesItOpenAndIsCounted) {
  auto daemon = Start();  // incidents.max_age: 24 h
  ASSERT_TRUE(WaitFor([&] { return HttpPort() != 0; })) << Stderr();
  // Among the start-up lines, before the failure.
  const std::string attempt = Attempt(0);
  const size_t third_line = attempt.find('\n', attempt.find('\n', attempt.find('\n') + 1) + 1) + 1;
  Append("vllm.log", attempt.substr(0, third_line));
  Append("vllm.log", "2099-01-01 00:00:00,000\tINFO worker.py:1 -- a clock gone wrong\n");
  Append("vllm.log", attempt.substr(third_line));
  ExpectOpenWithOneMisdatedLine(daemon);
}

// The same in a Kubernetes CRI log: a torch warning whose own date (May 17)
// would be read 74 days after the record containerd stamped (March 4) is
// dated by its record, and counted; the failure after it stays open.
TEST_F(IncidentLifetimeRunTest, ATorchDateFarAheadOfItsCriRecordLeavesTheFailureOpenAndIsCounted) {
  std::ifstream in(Golden(
      "cri/var/log/pods/inference_qwen3-fp8-7d9f8c6b5-x2x9k_0f3e6a2c-91b4-4d8e-a7f5-3c2b1d0e9f84/"
      "vllm/0.log"));
  std::string cri, line;
  for (int n = 0; std::getline(in, line); ++n) {
    cri += line + "\n";
    if (n == 2) {
      cri +=
          "2026-03-04T10:15:25.2Z stderr F [rank0]:[W0517 10:15:25.000000000 "
          "ProcessGroupNCCL.cpp:1000] Warning: a date the record's clock has not reached\n";
    }
  }
  auto daemon = Start();
  ASSERT_TRUE(WaitFor([&] { return HttpPort() != 0; })) << Stderr();
  Append("vllm.log", cri);
  ExpectOpenWithOneMisdatedLine(daemon);
}

class CrashLoopRunTest : public IncidentLifetimeRunTest,
                         public ::testing::WithParamInterface<bool> {};

TEST_P(CrashLoopRunTest, FiveFailingRestartsAreOneIncidentWithFiveOccurrencesAndReplaysId) {
  const bool sigkill = GetParam();
  auto daemon = Start();
  for (int attempt = 0; attempt < 5; ++attempt) {
    Append("vllm.log", Attempt(attempt));
    ASSERT_TRUE(WaitFor([&] { return HasOccurrences(attempt + 1); }))
        << "attempt " << attempt << "\n"
        << ReadFile(Incidents()) << Stderr();
    if (sigkill && attempt == 2) {
      ASSERT_EQ(daemon->Kill(SIGKILL), -1);
      daemon = Start();
    }
  }
  const auto latest = Latest();
  ASSERT_EQ(latest.size(), 1u) << ReadFile(Incidents());
  const Json& incident = latest.begin()->second;
  EXPECT_EQ(incident.count("closed"), 0u);
  EXPECT_EQ(incident["revision"].get<int>() >= 5, true);
  int opened = 0;
  for (const Json& j : IncidentLines()) opened += j["revision"] == 1;
  EXPECT_EQ(opened, 1) << "paged once";
  Stop(daemon);
  EXPECT_EQ(Replayed(), std::make_tuple(latest.begin()->first, 5, std::string("open")));
}

INSTANTIATE_TEST_SUITE_P(LiveAndSigkilled, CrashLoopRunTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "SigkillAfterThree" : "Live";
                         });

}  // namespace
}  // namespace fingerprintd::testing
