// `fingerprintd run` as Prometheus and an operator see it: /metrics, /incidents,
// the probes and the status page of a daemon tailing a TP=2 target failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/http_client.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing::run_harness {
namespace {

using ::testing::HasSubstr;

constexpr char kRank0[] =
    "fingerprintd_worker_failures{class=\"hardware_support\",deployment=\"qwen3\",rank=\"0\","
    "rule=\"deepgemm-unknown-sf-transformation\",severity=\"critical\"} 1";
constexpr char kRank1[] =
    "fingerprintd_worker_failures{class=\"hardware_support\",deployment=\"qwen3\",rank=\"1\","
    "rule=\"deepgemm-unknown-sf-transformation\",severity=\"critical\"} 1";

class HttpTest : public RunFixture {
 protected:
  uint16_t WaitForPort() {
    EXPECT_TRUE(WaitFor([&] { return HttpPort() != 0; })) << Stderr();
    return HttpPort();
  }
  bool MetricsHave(uint16_t port, const std::string& line) {
    return HttpGet(port, "/metrics").body.find(line) != std::string::npos;
  }
};

TEST_F(HttpTest, TheDaemonServesMetricsIncidentsProbesAndTheStatusPage) {
  auto daemon = Start();
  uint16_t port = WaitForPort();
  // No log yet: healthy, but not ready while its glob matches nothing.
  ASSERT_TRUE(WaitFor([&] { return HttpGet(port, "/readyz").status == 503; })) << Stderr();
  EXPECT_THAT(HttpGet(port, "/readyz").body, HasSubstr("*.log: no_match"));
  EXPECT_EQ(HttpGet(port, "/healthz").status, 200);
  EXPECT_THAT(HttpGet(port, "/metrics").body, HasSubstr("fingerprintd_rules_loaded "));

  Append("worker.log", Slice(lines_, 0, lines_.size()));
  ASSERT_TRUE(WaitFor([&] { return HttpGet(port, "/readyz").status == 200; })) << Stderr();
  ASSERT_TRUE(WaitFor([&] { return MetricsHave(port, kRank0) && MetricsHave(port, kRank1); }))
      << HttpGet(port, "/metrics").body << Stderr();
  HttpReply metrics = HttpGet(port, "/metrics");
  EXPECT_THAT(metrics.headers, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  EXPECT_THAT(metrics.body,
              HasSubstr("fingerprintd_incidents_total{class=\"hardware_support\",rule=\"deepgemm-"
                        "unknown-sf-transformation\",severity=\"critical\"} 1"));
  EXPECT_THAT(
      metrics.body,
      HasSubstr("fingerprintd_incident_expected_workers{deployment=\"qwen3\",rule=\"deepgemm-"
                "unknown-sf-transformation\"} 2"));

  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  Json incidents = Json::parse(HttpGet(port, "/incidents").body);
  ASSERT_EQ(incidents.size(), 1u);
  EXPECT_EQ(incidents[0], IncidentLines().back()) << "the same object as the JSONL log";
  EXPECT_EQ(Json::parse(HttpGet(port, "/incidents?deployment=qwen3").body).size(), 1u);
  EXPECT_EQ(Json::parse(HttpGet(port, "/incidents?deployment=other").body).size(), 0u);
  EXPECT_EQ(HttpGet(port, "/incidents?since=tomorrow").status, 400);

  HttpReply page = HttpGet(port, "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.body, HasSubstr("<td class=\"rank failed\" data-rank=\"1\""));
  EXPECT_EQ(HttpGet(port, "/nope").status, 404);
  EXPECT_EQ(HttpGet(port, "/metrics", "POST").status, 405);
  Stop(daemon);
}

TEST_F(HttpTest, AnOpenIncidentIsStillOnMetricsAndIncidentsAfterARestart) {
  auto daemon = Start();
  uint16_t port = WaitForPort();
  Append("worker.log", Slice(lines_, 0, lines_.size()));
  ASSERT_TRUE(WaitFor([&] { return MetricsHave(port, kRank1); })) << Stderr();
  Stop(daemon);

  daemon = Start();
  ASSERT_TRUE(WaitFor([&] { return StderrCount("http: listening on") == 2; })) << Stderr();
  port = HttpPort();
  // The checkpoint resumed the incident: Prometheus must not see it resolve.
  EXPECT_TRUE(MetricsHave(port, kRank0)) << HttpGet(port, "/metrics").body;
  EXPECT_TRUE(MetricsHave(port, kRank1));
  EXPECT_EQ(Json::parse(HttpGet(port, "/incidents").body).size(), 1u);
  Stop(daemon);
}

TEST_F(HttpTest, AnHttpPortInUseStopsTheDaemonWithAnErrorNamingIt) {
  auto first = Start();
  uint16_t port = WaitForPort();
  fs::path err = dir_ / "second.err";
  DaemonProcess second({"--http", "127.0.0.1:" + std::to_string(port), "--incidents",
                        (dir_ / "second.jsonl").string(), (dir_ / "logs" / "*.log").string()},
                       err);
  EXPECT_EQ(second.Kill(0, std::chrono::seconds(10)), 2) << ReadFile(err);
  EXPECT_THAT(ReadFile(err), HasSubstr("http listen 127.0.0.1:" + std::to_string(port)));
  Stop(first);
}

}  // namespace
}  // namespace fingerprintd::testing::run_harness
