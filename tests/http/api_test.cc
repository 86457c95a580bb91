// What each path answers, over real incidents from the embedded pack.
#include "http/api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "http/status_page.h"
#include "testing/counting_events.h"
#include "testing/incident_builder.h"
#include "testing/replay_harness.h"

namespace fingerprintd::http {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kNow = 1'764'504'000 * kSecond;  // 2025-11-30T12:00:00Z

correlate::Incident IncidentOf(const std::string& id, const std::string& deployment,
                               const std::string& rule, int expected, std::vector<int32_t> ranks,
                               int64_t last_seen_us) {
  correlate::Incident incident = testing::IncidentOfRule(rule, id, deployment);
  incident.expected = expected;
  incident.affected = static_cast<int>(ranks.size());
  incident.ranks = std::move(ranks);
  incident.first_seen_us = last_seen_us - kSecond;
  incident.last_seen_us = last_seen_us;
  incident.explanation = incident.rule->explanation;
  incident.remediation = incident.rule->remediation;
  incident.revision = 1;
  return incident;
}

class ApiTest : public ::testing::Test {
 protected:
  ApiTest() {
    store_.OnIncident(correlate::IncidentChange::kOpened,
                      IncidentOf("aaa", "qwen3-tp2", "deepgemm-unknown-sf-transformation", 2,
                                 {0, 1}, kNow - 10 * kSecond));
    correlate::Incident old =
        IncidentOf("bbb", "llama-tp4", "cuda-out-of-memory", 4, {2}, kNow - 3600 * kSecond);
    store_.OnIncident(correlate::IncidentChange::kOpened, old);
    old.closed = correlate::CloseReason::kRecovered;
    store_.OnIncident(correlate::IncidentChange::kClosed, old);
  }

  Response Get(std::string_view path, std::string_view query = "") {
    return api_.Handle(Request{"GET", path, query, ""}, kNow);
  }

  testing::CountingEvents events_;
  sink::Metrics metrics_{"9.9.9"};
  sink::IncidentStore store_{events_, /*max_recent_closed=*/500,
                             /*max_closed_age_us=*/24 * 3600 * kSecond};
  Api api_{metrics_, store_, "9.9.9"};
};

TEST_F(ApiTest, IncidentsAreTheJsonlObjectsOpenOnesFirst) {
  Response r = Get("/incidents");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  auto array = nlohmann::json::parse(r.body);
  ASSERT_EQ(array.size(), 2u);
  EXPECT_EQ(array[0]["incident_id"], "aaa");
  EXPECT_EQ(array[0]["schema"], "fingerprintd/incident/v1");
  EXPECT_EQ(array[0]["class"], "hardware_support");
  EXPECT_EQ(array[1]["incident_id"], "bbb");
  // The same object as the JSONL line, byte for byte.
  EXPECT_EQ(array[0].dump(),
            nlohmann::json::parse(correlate::IncidentToJson(store_.Query({})[0]->incident)).dump());
}

TEST_F(ApiTest, IncidentsFilterByDeploymentAndSince) {
  auto ids = [&](std::string_view query) {
    std::vector<std::string> out;
    for (const auto& i : nlohmann::json::parse(Get("/incidents", query).body)) {
      out.push_back(i["incident_id"]);
    }
    return out;
  };
  EXPECT_THAT(ids("deployment=llama-tp4"), ::testing::ElementsAre("bbb"));
  EXPECT_THAT(ids("deployment=qwen3%2Dtp2"), ::testing::ElementsAre("aaa"));
  EXPECT_THAT(ids("deployment=nobody"), ::testing::IsEmpty());
  EXPECT_THAT(ids("since=2025-11-30T11:30:00Z"), ::testing::ElementsAre("aaa"));
  EXPECT_THAT(ids("since=" + std::to_string(kNow / kSecond - 7200)),
              ::testing::ElementsAre("aaa", "bbb"));
}

// One failure in every deployment it was seen in: the same signature on the
// qwen3 and rtx deployments, none elsewhere; the status page says so.
TEST_F(ApiTest, IncidentsFilterBySignatureAndThePageSaysWhereElseItWasSeen) {
  correlate::Incident a =
      IncidentOf("sig-a", "rtx-tp2", "unclassified-startup-failure", 2, {0}, kNow - 60 * kSecond);
  correlate::Incident b =
      IncidentOf("sig-b", "qwen3-tp2", "unclassified-startup-failure", 2, {1}, kNow - 30 * kSecond);
  a.signature = b.signature = "sig-00112233aabbccdd";
  store_.OnIncident(correlate::IncidentChange::kOpened, a);
  store_.OnIncident(correlate::IncidentChange::kOpened, b);
  std::vector<std::string> ids;
  for (const auto& i :
       nlohmann::json::parse(Get("/incidents", "signature=sig-00112233aabbccdd").body)) {
    ids.push_back(i["incident_id"]);
  }
  EXPECT_THAT(ids, ::testing::ElementsAre("sig-b", "sig-a"));
  EXPECT_THAT(Get("/incidents", "signture=x").body,
              HasSubstr("(deployment, since, signature, id)"));
  EXPECT_THAT(
      Get("/").body,
      HasSubstr("seen in 2 deployments since " + correlate::FormatRfc3339(kNow - 61 * kSecond) +
                " · <a href=\"/incidents?signature=sig-00112233aabbccdd\">"));
}

// Issue 42: a listener beyond loopback served every incident (evidence,
// facts, model names) to anyone who could reach the port.
TEST_F(ApiTest, WithATokenEveryPathButTheProbesAndMetricsNeedsTheBearerToken) {
  api_.SetBearerToken("s3cret-token", /*metrics=*/false);
  auto get = [&](std::string_view path, std::string_view authorization) {
    return api_.Handle(Request{"GET", path, "", authorization}, kNow);
  };
  for (std::string_view path : {"/incidents", "/", "/nowhere"}) {
    Response denied = get(path, "");
    EXPECT_EQ(denied.status, 401) << path;
    EXPECT_EQ(denied.www_authenticate, "Bearer realm=\"fingerprintd\"") << path;
    EXPECT_EQ(denied.body.find("qwen3-tp2"), std::string::npos) << path;
    EXPECT_EQ(get(path, "Bearer wrong-token").status, 401) << path;
    EXPECT_EQ(get(path, "Bearer s3cret-token-and-more").status, 401) << path;
    EXPECT_EQ(get(path, "Basic s3cret-token").status, 401) << path;
  }
  EXPECT_EQ(get("/incidents", "Bearer s3cret-token").status, 200);
  EXPECT_EQ(get("/incidents", "bearer s3cret-token").status, 200);  // the scheme's case
  EXPECT_EQ(get("/nowhere", "Bearer s3cret-token").status, 404);
  EXPECT_EQ(get("/healthz", "").status, 200);
  EXPECT_EQ(get("/readyz", "").status, 503);  // not ready yet: answered, not refused
  EXPECT_EQ(get("/metrics", "").status, 200);
  api_.SetBearerToken("s3cret-token", /*metrics=*/true);
  EXPECT_EQ(get("/metrics", "").status, 401);
  EXPECT_EQ(get("/metrics", "Bearer s3cret-token").status, 200);
  api_.SetBearerToken("", false);  // none: open, as on loopback without a token file
  EXPECT_EQ(get("/incidents", "").status, 200);
}

TEST_F(ApiTest, ABadQueryParameterIsA400NamingIt) {
  Response r = Get("/incidents", "since=yesterday");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("since: 'yesterday'"));
  r = Get("/incidents", "deploymnet=x");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("unknown parameter 'deploymnet'"));
}

TEST_F(ApiTest, MetricsAreThePrometheusTextFormat) {
  metrics_.LineRead("/logs/a.log", 100);
  Response r = Get("/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(r.body, HasSubstr("fingerprintd_lines_total{source=\"/logs/a.log\"} 1"));
  EXPECT_THAT(r.body, HasSubstr("fingerprintd_build_info{version=\"9.9.9\"} 1"));
}

TEST_F(ApiTest, ReadyOnlyOnceTheDaemonSaysSo) {
  api_.SetReady(false, "opening sources");
  Response r = Get("/readyz");
  EXPECT_EQ(r.status, 503);
  EXPECT_THAT(r.body, HasSubstr("opening sources"));
  api_.SetReady(true, "");
  EXPECT_EQ(Get("/readyz").status, 200);
  EXPECT_EQ(Get("/healthz").status, 200);
}

TEST_F(ApiTest, TheStatusPageListsTheMostSevereFirstThenTheLongestOpenWithWhatTheOperatorChecks) {
  // A warning open for an hour, a critical crash loop open for ten minutes,
  // and an older critical one: critical first, the oldest of them first.
  correlate::Incident warning = IncidentOf("ccc-warning", "qwen3-tp2", "torch-arch-not-compiled", 2,
                                           {0}, kNow - 3600 * kSecond);
  store_.OnIncident(correlate::IncidentChange::kOpened, warning);
  correlate::Incident loop = IncidentOf("ddd-loop", "rtx-tp2", "deepgemm-unknown-sf-transformation",
                                        2, {0, 1}, kNow - 60 * kSecond);
  loop.first_seen_us = kNow - 600 * kSecond;
  loop.occurrences = 5;
  loop.regressed_from = "inc-before";
  loop.exception = "RuntimeError: Assertion error (layout.hpp:60): Unknown SF transformation";
  loop.facts = {{"compute_capability", "12.0"},
                {"device_name", "NVIDIA_GeForce_RTX_5090"},
                {"model", "Qwen/Qwen3-30B-A3B-FP8"},
                {"kernel", "DeepGemmFp8BlockScaledMMKernel"},
                {"engine_version", "0.11.2"}};
  store_.OnIncident(correlate::IncidentChange::kOpened, loop);
  const std::string page = Get("/").body;
  const size_t aaa = page.find("data-incident=\"aaa\"");
  const size_t critical_loop = page.find("data-incident=\"ddd-loop\"");
  const size_t warning_row = page.find("data-incident=\"ccc-warning\"");
  ASSERT_NE(critical_loop, std::string::npos);
  ASSERT_NE(warning_row, std::string::npos);
  EXPECT_LT(critical_loop, aaa) << "open 10 min before aaa's 11 s";
  EXPECT_LT(aaa, warning_row) << "critical before warning, however long open";
  const std::string row =
      page.substr(critical_loop, page.find("</section>", critical_loop) - critical_loop);
  EXPECT_THAT(row,
              HasSubstr("<a href=\"/incidents?id=ddd-loop\"><code>ddd-loop</code></a> (JSON)"));
  EXPECT_THAT(row, HasSubstr("<span class=\"occurrences\">5</span>"));
  EXPECT_THAT(row, HasSubstr("regressed from <a href=\"/incidents?id=inc-before\"><code>"
                             "inc-before</code></a>"));
  EXPECT_THAT(row, HasSubstr("open for <b class=\"open-for\">10 min</b>"));
  EXPECT_THAT(row, HasSubstr("last failure <b>1 min ago</b>"));
  EXPECT_THAT(row, HasSubstr("Unknown SF transformation"));
  EXPECT_THAT(row, HasSubstr("compute_capability: 12.0"));
  EXPECT_THAT(row, HasSubstr("device_name: NVIDIA_GeForce_RTX_5090"));
  EXPECT_THAT(row, HasSubstr("kernel: DeepGemmFp8BlockScaledMMKernel"));
  EXPECT_THAT(row, Not(HasSubstr("engine_version")));
  EXPECT_THAT(row, HasSubstr(correlate::FormatRfc3339(kNow - 600 * kSecond)));  // open since
}

TEST_F(ApiTest, TheStatusPageShowsACauseWithWhatItProvokedUnderItAndInItsGrid) {
  correlate::Incident cause =
      IncidentOf("eee-cause", "qwen-tp4", "cuda-out-of-memory", 4, {2}, kNow - 60 * kSecond);
  cause.severity = rules::Severity::kCritical;
  correlate::IncidentConsequence watchdog;
  watchdog.rule = testing::IncidentOfRule("nccl-watchdog-timeout", "x", "x").rule;
  watchdog.ranks = {0, 1, 3};
  watchdog.first_seen_us = kNow - 30 * kSecond;
  watchdog.evidence = {"rank0.log", 41, "[rank0]:[E1112 08:14:52] Watchdog caught <timeout>"};
  cause.consequences.push_back(watchdog);
  store_.OnIncident(correlate::IncidentChange::kOpened, cause);
  const std::string page = Get("/").body;
  const size_t row = page.find("data-incident=\"eee-cause\"");
  ASSERT_NE(row, std::string::npos);
  EXPECT_LT(row, page.find("data-incident=\"aaa\"")) << "critical, open longer";
  const size_t then = page.find("Then, as a consequence:", row);
  ASSERT_NE(then, std::string::npos);
  EXPECT_LT(then, page.find("What to do:", row)) << "what happened before what to do";
  EXPECT_THAT(page.substr(then, 800),
              HasSubstr("(<code>nccl-watchdog-timeout</code>, critical), ranks 0,1,3, from "));
  EXPECT_THAT(page, HasSubstr("<code>rank0.log:41</code>"));
  EXPECT_THAT(page, HasSubstr("Watchdog caught &lt;timeout&gt;"));
  EXPECT_THAT(page, HasSubstr("<td class=\"rank failed\" data-rank=\"2\" title=\"rank 2: failed "
                              "(the cause)\""));
  EXPECT_THAT(page, HasSubstr("<td class=\"rank consequence\" data-rank=\"3\" title=\"rank 3: "
                              "nccl-watchdog-timeout (a consequence)\""));
}

// Issue 45: what the on-call engineer asks of the page. The remedies are
// under "What to do" (the explanation is "Why"), the evidence is there with
// file:line, the incident's JSON is a link away; the closed table gives id,
// failure, close and the incident it regressed from, linked; a deployment
// whose last incident closed because it started healthy says since when.
TEST_F(ApiTest, TheStatusPageSaysWhatToDoShowsTheEvidenceAndWhenARecoveredDeploymentBecameHealthy) {
  correlate::Incident watchdog =
      IncidentOf("fff-nccl", "ds-tp8", "nccl-watchdog-timeout", 8, {3}, kNow - 5 * kSecond);
  watchdog.exception.clear();  // a C++ watchdog: no Python traceback
  for (int k = 0; k < 9; ++k) {
    watchdog.evidence.push_back(
        {"/var/log/pods/ds/rank3.log", 100u + k,
         "[rank3]:[E1112] Watchdog caught collective operation timeout " + std::to_string(k)});
  }
  store_.OnIncident(correlate::IncidentChange::kOpened, watchdog);
  const std::string page = Get("/").body;
  const size_t at = page.find("data-incident=\"fff-nccl\"");
  ASSERT_NE(at, std::string::npos) << page;
  const std::string block = page.substr(at, page.find("</section>", at) - at);
  const size_t what_to_do = block.find("<b>What to do:</b><ol><li>");
  ASSERT_NE(what_to_do, std::string::npos) << block;
  EXPECT_LT(block.find("<b>Why:</b>"), what_to_do);
  EXPECT_THAT(block.substr(what_to_do), HasSubstr(HtmlEscape(watchdog.remediation.front())));
  EXPECT_THAT(block, HasSubstr("<code class=\"exception\">[rank3]:[E1112] Watchdog caught "
                               "collective operation timeout 0</code>"))
      << "no traceback: the first evidence line says what failed";
  EXPECT_THAT(block, HasSubstr("<b>Evidence</b> (9 line(s), the first 6; all in its JSON)"));
  EXPECT_THAT(block, HasSubstr("<code class=\"where\">/var/log/pods/ds/rank3.log:105</code>"));
  EXPECT_THAT(block, Not(HasSubstr("rank3.log:106")));
  EXPECT_THAT(block, HasSubstr("open for <b class=\"open-for\">6 s</b>"));
  // llama-tp4's incident closed when it started healthy (the fixture's "bbb").
  EXPECT_THAT(page, HasSubstr("<h3 class=\"deployment\">llama-tp4</h3>\n<p class=\"healthy\">"
                              "healthy again"));
  EXPECT_THAT(page, HasSubstr("<table class=\"grid healthy\" data-deployment=\"llama-tp4\">"));
  EXPECT_THAT(page, Not(HasSubstr("<table class=\"grid healthy\" data-deployment=\"qwen3-tp2\">")));
  const size_t closed = page.find("<table id=\"closed\">");
  ASSERT_NE(closed, std::string::npos);
  EXPECT_THAT(page.substr(closed),
              HasSubstr("<tr data-incident=\"bbb\"><td><a href=\"/incidents?id=bbb\"><code>bbb"
                        "</code></a></td><td>llama-tp4</td>"));
  EXPECT_THAT(page.substr(closed), HasSubstr("<td>recovered</td>"));
  // The link answers with that incident alone.
  const nlohmann::json one = nlohmann::json::parse(Get("/incidents", "id=bbb").body);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0]["incident_id"], "bbb");
}

TEST_F(ApiTest, UnknownPathsAre404) {
  EXPECT_EQ(Get("/admin").status, 404);
  EXPECT_EQ(Get("/metrics/").status, 404);
}

TEST_F(ApiTest, TheStatusPageShowsTheOpenIncidentAndItsRankGrid) {
  Response r = Get("/");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_THAT(r.body, HasSubstr("<title>fingerprintd: 1 open incident(s)</title>"));
  EXPECT_THAT(r.body, HasSubstr("data-incident=\"aaa\""));
  EXPECT_THAT(r.body, HasSubstr("<td class=\"rank failed\" data-rank=\"0\""));
  EXPECT_THAT(r.body, HasSubstr("<td class=\"rank failed\" data-rank=\"1\""));
  // llama-tp4: rank 2 of 4 failed, 0, 1 and 3 did not.
  EXPECT_THAT(r.body, HasSubstr("<td class=\"rank\" data-rank=\"3\""));
  EXPECT_THAT(r.body, HasSubstr("recovered"));
  // Self-contained: nothing fetched from anywhere.
  EXPECT_THAT(r.body, Not(HasSubstr("<script")));
  EXPECT_THAT(r.body, Not(HasSubstr("src=")));
  EXPECT_THAT(r.body, Not(HasSubstr("stylesheet")));
}

TEST(StatusPageTest, LogTextIsEscaped) {
  auto rules = testing::EmbeddedRules();
  sink::StoredIncident s;
  s.incident = IncidentOf("x", "<script>alert(1)</script>", "cuda-out-of-memory", 1, {0}, kNow);
  s.incident.explanation = "a \"quoted\" & <b>bold</b> reason";
  std::string page = RenderStatusPage({&s}, {}, kNow, "1");
  EXPECT_THAT(page, Not(HasSubstr("<script>")));
  EXPECT_THAT(page, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(page, HasSubstr("a &quot;quoted&quot; &amp; &lt;b&gt;bold&lt;/b&gt; reason"));
}

// What the daemon reads, as the sidecar's operator checks it during an
// incident: the unreadable log first, then each file with when it last gave
// a line; a node's 10,000 files are counted beyond the first rows.
TEST_F(ApiTest, TheStatusPageListsTheSourcesTheUnreadableOnesFirstWithTheirLastLineTime) {
  std::vector<source::SourceStatus> sources = {
      {"/var/log/pods/a/vllm/0.log", "file", "reading", kNow - 7 * kSecond, false},
      {"/var/log/pods/b/vllm/0.log", "file", "permission_denied (open: Permission denied)", 0,
       true},
      {"tcp:127.0.0.1:5170", "tcp", "listening on 127.0.0.1:5170; 0 connection(s), 0 stream(s)", 0,
       false},
      {"/var/log/pods/<x>/0.log", "file", "reading", 0, false},
  };
  api_.SetSources(sources);
  std::string page = Get("/").body;
  const size_t table = page.find("<table id=\"sources\">");
  ASSERT_NE(table, std::string::npos) << page;
  EXPECT_THAT(page, HasSubstr("<h2>Sources (4)</h2>"));
  const size_t problem = page.find("<tr class=\"problem\"><td><code>/var/log/pods/b/vllm/0.log");
  const size_t first_file = page.find("/var/log/pods/a/vllm/0.log", table);
  ASSERT_NE(problem, std::string::npos) << page;
  EXPECT_LT(problem, first_file);
  EXPECT_THAT(page, HasSubstr("permission_denied (open: Permission denied)"));
  EXPECT_THAT(page, HasSubstr(correlate::FormatRfc3339(kNow - 7 * kSecond) + " (7 s ago)"));
  EXPECT_THAT(page, HasSubstr("none since start"));
  EXPECT_THAT(page, HasSubstr("/var/log/pods/&lt;x&gt;/0.log"));

  sources.assign(kMaxSourceRows + 5, {"/var/log/pods/p/0.log", "file", "reading", kNow, false});
  api_.SetSources(sources);
  page = Get("/").body;
  EXPECT_THAT(page, HasSubstr("and 5 more"));
  size_t rows = 0;
  for (size_t at = page.find("<tr class=\"source\">"); at != std::string::npos;
       at = page.find("<tr class=\"source\">", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, kMaxSourceRows);
}

TEST(PercentDecodeTest, DecodesEscapesAndPlusAndKeepsMalformedOnesAsText) {
  EXPECT_EQ(PercentDecode("a%2Fb+c"), "a/b c");
  EXPECT_EQ(PercentDecode("100%"), "100%");
  EXPECT_EQ(PercentDecode("%zz%4"), "%zz%4");
}

}  // namespace
}  // namespace fingerprintd::http
