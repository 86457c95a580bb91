// AlertmanagerSink against a fake Alertmanager on 127.0.0.1:0 in the test's
// own io_context: what it POSTs, when it resends, what a close sends, and
// what happens while Alertmanager is down (backoff, the queue cap). Every
// wait runs the io_context until a condition holds or a deadline passes.
#include "sink/alertmanager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "config/alertmanager_access.h"
#include "sink/metrics.h"
#include "testing/counting_events.h"
#include "testing/incident_builder.h"
#include "testing/replay_harness.h"

namespace fingerprintd::sink {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using Json = nlohmann::json;
using ::testing::HasSubstr;

constexpr int64_t kNow = 1'780'000'000'000'000;  // 2026-05-28T...Z, the injected wall clock
constexpr int64_t kFirstSeen = kNow - 90'000'000;

struct Request {
  std::string method, target, content_type, authorization;
  Json body;
};

// Alertmanager's POST /api/v2/alerts: records each request and answers
// `status`, or never answers when `silent`. Close() refuses connections.
class FakeAlertmanager {
 public:
  explicit FakeAlertmanager(asio::io_context& io, unsigned short port = 0)
      : io_(io), acceptor_(io) {
    tcp::endpoint at(asio::ip::make_address("127.0.0.1"), port);
    acceptor_.open(at.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(at);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    Accept();
  }
  unsigned short port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void Close() {
    beast::error_code ec;
    acceptor_.close(ec);
    held_.clear();
  }

  unsigned status = 200;
  bool silent = false;
  std::vector<Request> requests;

 private:
  struct Session {
    explicit Session(tcp::socket s) : stream(std::move(s)) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::response<http::string_body> response;
  };

  void Accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;
      auto session = std::make_shared<Session>(std::move(socket));
      http::async_read(session->stream, session->buffer, session->request,
                       [this, session](beast::error_code ec, size_t) { OnRequest(ec, session); });
      Accept();
    });
  }

  void OnRequest(beast::error_code ec, const std::shared_ptr<Session>& session) {
    if (ec) return;
    const auto& r = session->request;
    requests.push_back({std::string(r.method_string()), std::string(r.target()),
                        std::string(r[http::field::content_type]),
                        std::string(r[http::field::authorization]),
                        Json::parse(r.body(), nullptr, /*allow_exceptions=*/false)});
    if (silent) {
      held_.push_back(session);  // keep the connection open, unanswered
      return;
    }
    session->response.result(status);
    session->response.body() = status < 300 ? "" : R"({"message":"bad alert"})";
    session->response.prepare_payload();
    http::async_write(session->stream, session->response, [session](beast::error_code, size_t) {
      beast::error_code ignored;
      session->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  asio::io_context& io_;
  tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::vector<std::shared_ptr<Session>> held_;
};

// A free port with nobody listening (connection refused until a fake binds it).
unsigned short FreePort(asio::io_context& io) {
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

correlate::Incident IncidentOf(const std::string& id, std::vector<int32_t> ranks) {
  correlate::Incident incident =
      testing::IncidentOfRule("deepgemm-unknown-sf-transformation", id, "qwen3");
  incident.labels = {{"namespace", "llm"}};
  incident.confidence = rules::Confidence::kConfirmed;
  incident.expected = 2;
  incident.affected = static_cast<int>(ranks.size());
  incident.ranks = std::move(ranks);
  incident.identical = true;
  incident.first_seen_us = kFirstSeen;
  incident.explanation = "2/2 tensor-parallel workers failed identically inside DeepGEMM";
  incident.remediation = {"load a per-tensor FP8 variant", "set VLLM_USE_DEEP_GEMM=0"};
  return incident;
}

class AlertmanagerSinkTest : public ::testing::Test {
 protected:
  // The rule pack is compiled once, before any timer runs.
  void SetUp() override { testing::EmbeddedRules(); }

  std::unique_ptr<AlertmanagerSink> Make(const std::string& url,
                                         std::function<void(AlertmanagerOptions&)> tweak = {}) {
    AlertmanagerOptions options;
    options.url = url;
    options.labels = {{"cluster", "prod"}};
    options.resend_interval_us = 60'000'000;
    options.timeout_us = 2'000'000;
    options.backoff_initial_us = 20'000;
    options.backoff_max_us = 80'000;
    options.now_us = [this] { return now_us_; };
    options.log = [this](std::string_view line) { log_.emplace_back(line); };
    options.generator_url_base = "http://node-a:9464";
    if (tweak) tweak(options);
    auto sink = AlertmanagerSink::Create(io_, options, events_);
    EXPECT_TRUE(sink.ok()) << sink.status().message();
    (*sink)->Start();
    return std::move(*sink);
  }
  // Runs the io_context until `done` or 5 s.
  bool RunUntil(const std::function<bool()>& done) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < end) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(5));
    }
    return done();
  }
  void RunFor(std::chrono::milliseconds time) {
    io_.restart();
    io_.run_for(time);
  }
  size_t LogLinesWith(const std::string& text) const {
    return std::count_if(log_.begin(), log_.end(),
                         [&](const std::string& l) { return l.find(text) != std::string::npos; });
  }

  asio::io_context io_;
  testing::CountingEvents events_;
  int64_t now_us_ = kNow;
  std::vector<std::string> log_;
};

// The cause pages, as loud as what it provoked, and says what that was: one
// alert for the out-of-memory rank, none for the watchdogs it set off.
TEST_F(AlertmanagerSinkTest, ACauseIsPostedWithItsSeverityAndItsConsequences) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url());
  correlate::Incident incident = IncidentOf("inc-oom", {2});
  incident.severity = rules::Severity::kCritical;
  correlate::IncidentConsequence watchdog;
  watchdog.rule = testing::IncidentOfRule("nccl-watchdog-timeout", "x", "x").rule;
  watchdog.ranks = {0, 1, 3};
  correlate::IncidentConsequence dead;
  dead.rule = testing::IncidentOfRule("engine-dead", "x", "x").rule;
  dead.workers = {"APIServer pid=1", "EngineCore_DP0 pid=90"};
  incident.consequences = {watchdog, dead};
  sink->OnIncident(correlate::IncidentChange::kOpened, incident);
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 1; }));
  const Json& alert = am.requests[0].body[0];
  EXPECT_EQ(alert["labels"]["severity"], "critical");
  EXPECT_EQ(alert["annotations"]["consequences"],
            "nccl-watchdog-timeout (critical): ranks 0,1,3\n"
            "engine-dead (critical): APIServer pid=1, EngineCore_DP0 pid=90");
}

TEST_F(AlertmanagerSinkTest, AnOpenedIncidentIsPostedWithItsLabelsAnnotationsAndStartTime) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url() + "/prefix/");
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0, 1}));
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 1; }));
  const Request& r = am.requests[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/prefix/api/v2/alerts");
  EXPECT_EQ(r.content_type, "application/json");
  ASSERT_TRUE(r.body.is_array() && r.body.size() == 1) << r.body.dump();
  const Json& alert = r.body[0];
  EXPECT_EQ(alert["labels"], Json({{"alertname", "FingerprintdIncident"},
                                   {"rule", "deepgemm-unknown-sf-transformation"},
                                   {"class", "hardware_support"},
                                   {"severity", "critical"},
                                   {"confidence", "confirmed"},
                                   {"deployment", "qwen3"},
                                   {"incident_id", "inc-1"},
                                   {"namespace", "llm"},
                                   {"cluster", "prod"}}));
  EXPECT_THAT(alert["annotations"]["summary"].get<std::string>(), HasSubstr("DeepGEMM"));
  EXPECT_THAT(alert["annotations"]["description"].get<std::string>(),
              HasSubstr("failed identically"));
  EXPECT_EQ(alert["annotations"]["remediation"],
            "load a per-tensor FP8 variant\nset VLLM_USE_DEEP_GEMM=0");
  EXPECT_EQ(alert["annotations"]["workers"], "2/2 affected, ranks 0,1, identical traceback");
  EXPECT_EQ(alert["startsAt"], correlate::FormatRfc3339(kFirstSeen));
  // Firing until 10 minutes from now (four 1-minute resend intervals are
  // less), unless resent or closed first.
  EXPECT_EQ(alert["endsAt"], correlate::FormatRfc3339(kNow + kMinOpenAlertLifetimeUs));
  EXPECT_EQ(alert["generatorURL"], "http://node-a:9464/incidents?deployment=qwen3");
  // Counted once the reply is read (the fake records the request before it answers).
  EXPECT_TRUE(RunUntil([&] { return sink->stats().sent == 1; }));
}

TEST_F(AlertmanagerSinkTest, AnOpenIncidentIsResentEveryIntervalWithItsEndMovedForward) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url(), [](AlertmanagerOptions& o) { o.resend_interval_us = 50'000; });
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() >= 1; }));
  now_us_ += 1'000'000;
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() >= 3; }));
  const Json& resent = am.requests.back().body[0];
  EXPECT_EQ(resent["labels"]["incident_id"], "inc-1");
  EXPECT_EQ(resent["startsAt"], correlate::FormatRfc3339(kFirstSeen));
  EXPECT_EQ(resent["endsAt"], correlate::FormatRfc3339(now_us_ + kMinOpenAlertLifetimeUs));
  EXPECT_EQ(sink->stats().open, 1u);
}

TEST_F(AlertmanagerSinkTest, ManyMoreOpenIncidentsThanTheQueueHoldsAreAllResentAndNoneDropped) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url(), [](AlertmanagerOptions& o) {
    o.queue_size = 2;
    o.max_batch = 2;
    o.resend_interval_us = 100'000;
  });
  for (int i = 1; i <= 7; ++i) {
    sink->OnIncident(correlate::IncidentChange::kOpened,
                     IncidentOf("inc-" + std::to_string(i), {0}));
    ASSERT_TRUE(RunUntil([&] { return sink->stats().sent >= static_cast<uint64_t>(i); }));
  }
  size_t before = am.requests.size();
  ASSERT_TRUE(RunUntil([&] { return sink->stats().sent >= 14; }));  // one resend of all 7
  std::set<std::string> resent;
  for (size_t r = before; r < am.requests.size(); ++r) {
    EXPECT_LE(am.requests[r].body.size(), 2u);
    for (const Json& a : am.requests[r].body) resent.insert(a["labels"]["incident_id"]);
  }
  EXPECT_EQ(resent.size(), 7u);
  EXPECT_EQ(sink->stats().evicted, 0u);
  EXPECT_EQ(events_.Evictions(Evicted::kAlert), 0u);
}

TEST_F(AlertmanagerSinkTest, AClosedIncidentIsSentOnceWithItsCloseTimeAndNeverResent) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url(), [](AlertmanagerOptions& o) { o.resend_interval_us = 30'000; });
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0, 1}));
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() >= 1; }));
  now_us_ += 5'000'000;
  correlate::Incident closed = IncidentOf("inc-1", {0, 1});
  closed.closed = correlate::CloseReason::kRecovered;
  sink->OnIncident(correlate::IncidentChange::kClosed, closed);
  ASSERT_TRUE(RunUntil([&] {
    return !am.requests.empty() &&
           am.requests.back().body[0]["endsAt"] == correlate::FormatRfc3339(kNow + 5'000'000);
  }));
  size_t requests = am.requests.size();
  RunFor(std::chrono::milliseconds(150));  // five resend intervals
  EXPECT_EQ(am.requests.size(), requests);
  EXPECT_EQ(sink->stats().open, 0u);
}

TEST_F(AlertmanagerSinkTest, AnIncidentClosedWithoutBeingSeenOpenIsStillResolved) {
  // Opened before a restart (restored from the checkpoint), closed after it.
  FakeAlertmanager am(io_);
  auto sink = Make(am.url());
  sink->OnIncident(correlate::IncidentChange::kClosed, IncidentOf("inc-restored", {0}));
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 1; }));
  EXPECT_EQ(am.requests[0].body[0]["labels"]["incident_id"], "inc-restored");
  EXPECT_EQ(am.requests[0].body[0]["endsAt"], correlate::FormatRfc3339(kNow));
}

TEST_F(AlertmanagerSinkTest, AStartTimeAfterNowIsSentAsNow) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url());
  correlate::Incident incident = IncidentOf("inc-1", {0});
  incident.first_seen_us = kNow + 3'600'000'000;  // a log zone guessed wrong by an hour
  sink->OnIncident(correlate::IncidentChange::kClosed, incident);
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 1; }));
  EXPECT_EQ(am.requests[0].body[0]["startsAt"], correlate::FormatRfc3339(kNow));
  EXPECT_EQ(am.requests[0].body[0]["endsAt"], correlate::FormatRfc3339(kNow));
}

TEST_F(AlertmanagerSinkTest, WhileAlertmanagerIsDownItRetriesWithBackoffAndDeliversWhenItIsBack) {
  unsigned short port = FreePort(io_);
  auto sink = Make("http://127.0.0.1:" + std::to_string(port));
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0, 1}));
  ASSERT_TRUE(RunUntil([&] { return sink->stats().posts_failed >= 3; }));
  EXPECT_EQ(LogLinesWith("unreachable"), 1u);  // once per outage, not per retry
  EXPECT_THAT(log_.front(), HasSubstr("1 alert(s) queued"));
  EXPECT_EQ(sink->stats().queued, 1u);
  FakeAlertmanager am(io_, port);
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 1; }));
  EXPECT_EQ(am.requests[0].body[0]["labels"]["incident_id"], "inc-1");
  ASSERT_TRUE(RunUntil([&] { return sink->stats().sent == 1; }));
  EXPECT_EQ(LogLinesWith("reachable again"), 1u);
  EXPECT_EQ(sink->stats().queued, 0u);
}

TEST_F(AlertmanagerSinkTest, TheBackoffDoublesUpToItsCap) {
  unsigned short port = FreePort(io_);
  auto sink = Make("http://127.0.0.1:" + std::to_string(port), [](AlertmanagerOptions& o) {
    o.backoff_initial_us = 40'000;
    o.backoff_max_us = 160'000;
  });
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  // Attempts at 0, 40, 120, 280, 440, 600 ms: five in the first ~0.5 s, not dozens.
  RunFor(std::chrono::milliseconds(500));
  EXPECT_GE(sink->stats().posts_failed, 4u);
  EXPECT_LE(sink->stats().posts_failed, 5u);
}

TEST_F(AlertmanagerSinkTest, WhileDownTheQueueKeepsTheNewestAlertsAndCountsTheOldestDropped) {
  unsigned short port = FreePort(io_);
  auto sink = Make("http://127.0.0.1:" + std::to_string(port),
                   [](AlertmanagerOptions& o) { o.queue_size = 2; });
  for (int i = 1; i <= 5; ++i) {
    sink->OnIncident(correlate::IncidentChange::kOpened,
                     IncidentOf("inc-" + std::to_string(i), {0}));
  }
  ASSERT_TRUE(RunUntil([&] { return sink->stats().posts_failed >= 1; }));
  EXPECT_EQ(sink->stats().evicted, 3u);
  EXPECT_EQ(events_.Evictions(Evicted::kAlert), 3u);
  EXPECT_EQ(EvictedName(Evicted::kAlert), "alert");
  FakeAlertmanager am(io_, port);
  ASSERT_TRUE(RunUntil([&] { return sink->stats().sent == 2; }));
  std::vector<std::string> ids;
  for (const Request& r : am.requests) {
    for (const Json& a : r.body) ids.push_back(a["labels"]["incident_id"]);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"inc-4", "inc-5"}));
}

TEST_F(AlertmanagerSinkTest,
       AnIncidentOpenedAndClosedWhileDownIsDeliveredResolvedAndOutlivesTheCap) {
  unsigned short port = FreePort(io_);
  auto sink = Make("http://127.0.0.1:" + std::to_string(port),
                   [](AlertmanagerOptions& o) { o.queue_size = 2; });
  correlate::Incident brief = IncidentOf("inc-brief", {0, 1});
  brief.first_seen_us = kNow - 60'000'000;
  sink->OnIncident(correlate::IncidentChange::kOpened, brief);
  brief.revision = 2;
  brief.closed = correlate::CloseReason::kRecovered;
  brief.closed_us = kNow - 10'000'000;
  sink->OnIncident(correlate::IncidentChange::kClosed, brief);
  // Later open incidents fill the queue past its cap: they go, not the close.
  for (int i = 1; i <= 3; ++i) {
    sink->OnIncident(correlate::IncidentChange::kOpened,
                     IncidentOf("inc-open-" + std::to_string(i), {0}));
  }
  ASSERT_TRUE(RunUntil([&] { return sink->stats().posts_failed >= 1; }));
  EXPECT_EQ(sink->stats().evicted, 2u);
  FakeAlertmanager am(io_, port);
  ASSERT_TRUE(RunUntil([&] { return sink->stats().sent >= 2; }));
  const Json& resolved = am.requests.front().body[0];
  EXPECT_EQ(resolved["labels"]["incident_id"], "inc-brief");
  EXPECT_EQ(resolved["startsAt"], correlate::FormatRfc3339(kNow - 60'000'000));
  EXPECT_EQ(resolved["endsAt"], correlate::FormatRfc3339(kNow - 10'000'000));
}

TEST_F(AlertmanagerSinkTest, ACrashLoopsOccurrencesAreUpdatesOfOneAlertThatStaysFiring) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url());
  correlate::Incident incident = IncidentOf("inc-loop", {0, 1});
  sink->OnIncident(correlate::IncidentChange::kOpened, incident);
  for (int occurrence = 2; occurrence <= 5; ++occurrence) {
    ASSERT_TRUE(
        RunUntil([&] { return am.requests.size() >= static_cast<size_t>(occurrence - 1); }));
    incident.revision = occurrence;
    incident.occurrences = occurrence;
    sink->OnIncident(correlate::IncidentChange::kUpdated, incident);
  }
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() >= 5; }));
  std::set<std::string> ids;
  for (const Request& r : am.requests) {
    for (const Json& a : r.body) {
      ids.insert(a["labels"]["incident_id"]);
      EXPECT_GT(a["endsAt"].get<std::string>(), correlate::FormatRfc3339(kNow)) << "still firing";
    }
  }
  EXPECT_EQ(ids, std::set<std::string>{"inc-loop"});
  EXPECT_EQ(sink->stats().open, 1u);
}

TEST_F(AlertmanagerSinkTest, OnShutdownTheQueuedCloseIsFlushedBeforeExit) {
  unsigned short port = FreePort(io_);
  auto sink = Make("http://127.0.0.1:" + std::to_string(port));
  correlate::Incident incident = IncidentOf("inc-1", {0});
  incident.closed = correlate::CloseReason::kRecovered;
  sink->OnIncident(correlate::IncidentChange::kClosed, incident);
  ASSERT_TRUE(RunUntil([&] { return sink->stats().posts_failed >= 1; }));
  FakeAlertmanager am(io_, port);  // back while the daemon stops
  std::optional<size_t> left;
  sink->Flush([&](size_t n) { left = n; });
  ASSERT_TRUE(RunUntil([&] { return left.has_value(); }));
  EXPECT_EQ(*left, 0u);
  ASSERT_EQ(am.requests.size(), 1u);
  EXPECT_EQ(am.requests[0].body[0]["labels"]["incident_id"], "inc-1");
}

TEST_F(AlertmanagerSinkTest, OnShutdownAnUnreachableAlertmanagerIsGivenUpAfterThePushTimeout) {
  unsigned short port = FreePort(io_);
  auto sink = Make("http://127.0.0.1:" + std::to_string(port),
                   [](AlertmanagerOptions& o) { o.timeout_us = 200'000; });
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  std::optional<size_t> left;
  const auto start = std::chrono::steady_clock::now();
  sink->Flush([&](size_t n) { left = n; });
  ASSERT_TRUE(RunUntil([&] { return left.has_value(); }));
  EXPECT_EQ(*left, 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_GE(sink->stats().posts_failed, 1u);
}

TEST_F(AlertmanagerSinkTest, ANewerStateOfAQueuedIncidentReplacesIt) {
  unsigned short port = FreePort(io_);
  auto sink = Make("http://127.0.0.1:" + std::to_string(port));
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return sink->stats().posts_failed >= 1; }));
  sink->OnIncident(correlate::IncidentChange::kUpdated, IncidentOf("inc-1", {0, 1}));
  FakeAlertmanager am(io_, port);
  ASSERT_TRUE(RunUntil([&] { return sink->stats().sent >= 1; }));
  ASSERT_EQ(am.requests.size(), 1u);
  ASSERT_EQ(am.requests[0].body.size(), 1u);
  EXPECT_EQ(am.requests[0].body[0]["annotations"]["workers"],
            "2/2 affected, ranks 0,1, identical traceback");
  EXPECT_EQ(sink->stats().evicted, 0u);
}

TEST_F(AlertmanagerSinkTest, AlertsAlertmanagerRejectsAreDroppedCountedAndLoggedNotRetried) {
  FakeAlertmanager am(io_);
  am.status = 400;
  auto sink = Make(am.url());
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return sink->stats().rejected == 1; }));
  RunFor(std::chrono::milliseconds(200));
  EXPECT_EQ(am.requests.size(), 1u);
  EXPECT_EQ(LogLinesWith("rejected with HTTP 400: {\"message\":\"bad alert\"}"), 1u);
}

TEST_F(AlertmanagerSinkTest, AServerErrorIsRetried) {
  FakeAlertmanager am(io_);
  am.status = 503;
  auto sink = Make(am.url());
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() >= 2; }));
  am.status = 200;
  ASSERT_TRUE(RunUntil([&] { return sink->stats().sent == 1; }));
  EXPECT_EQ(LogLinesWith("HTTP 503"), 1u);
}

// Issue 42: a managed Alertmanager asks for a login. The password is read
// from its file for each POST: a 401 is retried (the credentials were
// refused, not the alerts), logged saying which keys to check, and the alert
// is delivered once the Secret holds the right one, without a restart.
TEST_F(AlertmanagerSinkTest, ARefusedPasswordIsRetriedAndTheFixedSecretIsUsedWithoutARestart) {
  FakeAlertmanager am(io_);
  am.status = 401;
  const std::string password = ::testing::TempDir() + "/am-password";
  { std::ofstream(password) << "wrong\n"; }
  auto sink = Make(am.url(), [&](AlertmanagerOptions& o) {
    o.auth.username = "fp";
    o.auth.password_file = password;
  });
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() >= 2; }));
  EXPECT_EQ(am.requests[0].authorization, "Basic ZnA6d3Jvbmc=");  // fp:wrong
  EXPECT_EQ(sink->stats().rejected, 0u);
  EXPECT_EQ(LogLinesWith("HTTP 401: the credentials were refused (alertmanager.basic_auth"), 1u);
  EXPECT_EQ(LogLinesWith("wrong"), 0u);  // the secret is never logged
  { std::ofstream(password) << "s3cret\n"; }
  am.status = 200;
  ASSERT_TRUE(RunUntil([&] { return sink->stats().sent == 1; }));
  EXPECT_EQ(am.requests.back().authorization, "Basic ZnA6czNjcmV0");  // fp:s3cret
}

TEST_F(AlertmanagerSinkTest, ABearerTokenFileIsSentAsTheAuthorization) {
  FakeAlertmanager am(io_);
  const std::string token = ::testing::TempDir() + "/am-token";
  { std::ofstream(token) << "tok-123\n"; }
  auto sink = Make(am.url(), [&](AlertmanagerOptions& o) { o.auth.bearer_token_file = token; });
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return sink->stats().sent == 1; }));
  EXPECT_EQ(am.requests[0].authorization, "Bearer tok-123");
}

TEST(AlertmanagerOptionsTest, MissingSecretOrCaFilesFailAtStartNamingTheKeyAndTheFile) {
  asio::io_context io;
  testing::CountingEvents events;
  AlertmanagerOptions options;
  options.now_us = [] { return kNow; };
  options.url = "http://127.0.0.1:9093";
  options.auth.bearer_token_file = "/nonexistent/token";
  EXPECT_THAT(AlertmanagerSink::Create(io, options, events).status().message(),
              HasSubstr("alertmanager.bearer_token_file: /nonexistent/token: cannot be read: No "
                        "such file or directory"));
  options.auth = {};
  options.url = "https://127.0.0.1:9093";
  options.tls.ca_file = "/nonexistent/ca.crt";
  EXPECT_THAT(AlertmanagerSink::Create(io, options, events).status().message(),
              HasSubstr("alertmanager.tls_config.ca_file: /nonexistent/ca.crt: cannot be read"));
  options.url = "http://127.0.0.1:9093";
  EXPECT_THAT(AlertmanagerSink::Create(io, options, events).status().message(),
              HasSubstr("alertmanager.tls_config: needs an https:// url"));
}

TEST_F(AlertmanagerSinkTest, AnAlertmanagerThatNeverAnswersTimesOutAndIsRetried) {
  FakeAlertmanager am(io_);
  am.silent = true;
  auto sink = Make(am.url(), [](AlertmanagerOptions& o) { o.timeout_us = 100'000; });
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() >= 2; }));
  EXPECT_GE(sink->stats().posts_failed, 1u);
  EXPECT_EQ(sink->stats().sent, 0u);
  EXPECT_EQ(LogLinesWith("unreachable"), 1u);
}

TEST_F(AlertmanagerSinkTest, AfterStopNothingIsSent) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url());
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return sink->stats().sent == 1; }));
  sink->Stop();
  sink->OnIncident(correlate::IncidentChange::kUpdated, IncidentOf("inc-1", {0, 1}));
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-2", {0}));
  RunFor(std::chrono::milliseconds(100));
  EXPECT_EQ(am.requests.size(), 1u);
  EXPECT_EQ(sink->stats().queued, 0u);
}

// Issue 41: an open incident's alert ended four resend intervals after its
// last send, so a daemon stopped longer than that (a restart with a short
// resend_interval, a pod rescheduled) had Alertmanager resolve a failure that
// was still there, and page again once the daemon was back.
TEST_F(AlertmanagerSinkTest, AnOpenAlertLastsFourResendIntervalsAndNeverLessThanTenMinutes) {
  EXPECT_EQ(kMinOpenAlertLifetimeUs, 600'000'000);
  EXPECT_EQ(OpenAlertLifetimeUs(1'000'000), kMinOpenAlertLifetimeUs);
  EXPECT_EQ(OpenAlertLifetimeUs(60'000'000), kMinOpenAlertLifetimeUs);
  EXPECT_EQ(OpenAlertLifetimeUs(300'000'000), 1'200'000'000);
  FakeAlertmanager am(io_);
  auto sink = Make(am.url(), [](AlertmanagerOptions& o) { o.resend_interval_us = 300'000'000; });
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 1; }));
  EXPECT_EQ(am.requests[0].body[0]["endsAt"], correlate::FormatRfc3339(kNow + 1'200'000'000));
}

// The daemon stopped (SIGTERM: Flush, then the sink is gone) and started
// again a minute later with its checkpoint: the alert sent last still fires
// then, and the restored incident (Pipeline::ReportOpenIncidents hands it to
// the new sink as an update) is sent at once with the same labels and its
// original startsAt: for Alertmanager, the same alert, never resolved.
TEST_F(AlertmanagerSinkTest, ARestartResendsTheRestoredIncidentAsTheSameAlertBeforeItsEnd) {
  FakeAlertmanager am(io_);
  correlate::Incident incident = IncidentOf("inc-1", {0, 1});
  incident.revision = 2;
  auto fast = [](AlertmanagerOptions& o) { o.resend_interval_us = 1'000'000; };
  {
    auto before = Make(am.url(), fast);
    before->OnIncident(correlate::IncidentChange::kOpened, incident);
    ASSERT_TRUE(RunUntil([&] { return before->stats().sent == 1; }));
    std::optional<size_t> left;
    before->Flush([&](size_t n) { left = n; });
    ASSERT_TRUE(RunUntil([&] { return left.has_value(); }));
    EXPECT_EQ(*left, 0u);
  }
  ASSERT_EQ(am.requests.size(), 1u) << "the stop sent something: " << am.requests.back().body;
  const Json first = am.requests[0].body[0];
  now_us_ += 60'000'000;
  EXPECT_GT(first["endsAt"].get<std::string>(), correlate::FormatRfc3339(now_us_))
      << "ended while the daemon was away";
  auto after = Make(am.url(), fast);
  after->OnIncident(correlate::IncidentChange::kUpdated, incident);
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 2; }));
  const Json& again = am.requests[1].body[0];
  EXPECT_EQ(again["labels"], first["labels"]);
  EXPECT_EQ(again["startsAt"], correlate::FormatRfc3339(kFirstSeen));
  EXPECT_EQ(again["startsAt"], first["startsAt"]);
  EXPECT_EQ(again["endsAt"], correlate::FormatRfc3339(now_us_ + kMinOpenAlertLifetimeUs));
}

// A stop is not a recovery: what SIGTERM flushes of an open incident is its
// firing state, never an endsAt of now.
TEST_F(AlertmanagerSinkTest, OnShutdownAQueuedOpenIncidentIsSentStillFiring) {
  unsigned short port = FreePort(io_);
  auto sink = Make("http://127.0.0.1:" + std::to_string(port));
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return sink->stats().posts_failed >= 1; }));
  FakeAlertmanager am(io_, port);
  now_us_ += 5'000'000;
  std::optional<size_t> left;
  sink->Flush([&](size_t n) { left = n; });
  ASSERT_TRUE(RunUntil([&] { return left.has_value(); }));
  EXPECT_EQ(*left, 0u);
  ASSERT_EQ(am.requests.size(), 1u);
  EXPECT_EQ(am.requests[0].body[0]["labels"]["incident_id"], "inc-1");
  EXPECT_EQ(am.requests[0].body[0]["endsAt"],
            correlate::FormatRfc3339(now_us_ + kMinOpenAlertLifetimeUs));
}

// Issue 41: the out-of-memory incident (rule cuda-out-of-memory, class
// resource, severity error) was `error` when pushed and `critical` in the
// Prometheus alerts. The alerts over the metrics now take the metric's
// severity label, and both sinks name the incident's severity (SeverityOf).
TEST_F(AlertmanagerSinkTest, TheAlertsSeverityIsTheIncidentsAndTheSameAsTheMetrics) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url());
  correlate::Incident oom = testing::IncidentOfRule("cuda-out-of-memory", "inc-oom", "ds-v3");
  oom.ranks = {0};
  oom.affected = 1;
  oom.first_seen_us = kFirstSeen;
  ASSERT_EQ(oom.rule->severity, rules::Severity::kError);
  sink->OnIncident(correlate::IncidentChange::kOpened, oom);
  Metrics metrics("1");
  metrics.OnIncident(correlate::IncidentChange::kOpened, oom);
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 1; }));
  EXPECT_EQ(SeverityOf(oom), "error");
  EXPECT_EQ(am.requests[0].body[0]["labels"]["severity"], "error");
  EXPECT_THAT(metrics.Serialize(0),
              HasSubstr(R"(fingerprintd_worker_failures{class="resource",deployment="ds-v3",)"
                        R"(rank="0",rule="cuda-out-of-memory",severity="error"} 1)"));
}

TEST_F(AlertmanagerSinkTest, EveryAlertPointsAtItsDeploymentsIncidentsOnTheDaemon) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url(), [](AlertmanagerOptions& o) {
    o.generator_url_base = "https://fingerprintd.example.org/node-a/";
  });
  correlate::Incident incident = IncidentOf("inc-1", {0});
  incident.deployment = "llm/qwen3 fp8";
  sink->OnIncident(correlate::IncidentChange::kOpened, incident);
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 1; }));
  incident.closed = correlate::CloseReason::kRecovered;
  sink->OnIncident(correlate::IncidentChange::kClosed, incident);
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 2; }));
  for (const Request& r : am.requests) {
    EXPECT_EQ(r.body[0]["generatorURL"],
              "https://fingerprintd.example.org/node-a/incidents?deployment=llm%2Fqwen3%20fp8");
  }
}

TEST_F(AlertmanagerSinkTest, WithoutAGeneratorUrlBaseNoGeneratorUrlIsSent) {
  FakeAlertmanager am(io_);
  auto sink = Make(am.url(), [](AlertmanagerOptions& o) { o.generator_url_base.clear(); });
  sink->OnIncident(correlate::IncidentChange::kOpened, IncidentOf("inc-1", {0}));
  ASSERT_TRUE(RunUntil([&] { return am.requests.size() == 1; }));
  EXPECT_FALSE(am.requests[0].body[0].contains("generatorURL")) << am.requests[0].body;
}

TEST(GeneratorUrlTest, ABaseIsAnHttpOrHttpsUrlWithoutQueryOrFragment) {
  EXPECT_EQ(*config::ParseGeneratorUrlBase("http://node-a:9464"), "http://node-a:9464");
  EXPECT_EQ(*config::ParseGeneratorUrlBase("https://fp.example.org/node-a/"),
            "https://fp.example.org/node-a");
  EXPECT_EQ(*config::ParseGeneratorUrlBase("http://[fd00::1]:9464/"), "http://[fd00::1]:9464");
  for (const char* bad : {"", "node-a:9464", "ftp://node-a", "http://", "http://node a",
                          "http://node-a/?x=1", "http://node-a/#top"}) {
    auto base = config::ParseGeneratorUrlBase(bad);
    ASSERT_FALSE(base.ok()) << bad;
    EXPECT_THAT(base.status().message(),
                HasSubstr("expected http(s)://host[:port][/path] with no query or fragment"))
        << bad;
  }
  EXPECT_THAT(config::ParseGeneratorUrlBase("http://node-a:70000").status().message(),
              HasSubstr("port out of range in 'http://node-a:70000'"));
}

TEST(GeneratorUrlTest, TheDefaultIsTheBoundListenAddressWithAWildcardHostNamed) {
  EXPECT_EQ(DefaultGeneratorUrlBase("127.0.0.1:9464", "node-a"), "http://127.0.0.1:9464");
  EXPECT_EQ(DefaultGeneratorUrlBase("[::1]:9464", "node-a"), "http://[::1]:9464");
  EXPECT_EQ(DefaultGeneratorUrlBase("0.0.0.0:9464", "node-a"), "http://node-a:9464");
  EXPECT_EQ(DefaultGeneratorUrlBase("[::]:9464", "node-a"), "http://node-a:9464");
  EXPECT_EQ(DefaultGeneratorUrlBase("0.0.0.0:9464", ""), "http://0.0.0.0:9464");
  // Whatever the host name, the default is a base the sink accepts.
  EXPECT_TRUE(
      config::ParseGeneratorUrlBase(DefaultGeneratorUrlBase("0.0.0.0:9464", "node-a")).ok());
}

TEST(AlertmanagerOptionsTest, ABadGeneratorUrlBaseIsAnError) {
  boost::asio::io_context io;
  testing::CountingEvents events;
  AlertmanagerOptions options;
  options.url = "http://127.0.0.1:9093";
  options.now_us = [] { return kNow; };
  options.generator_url_base = "node-a:9464";
  auto sink = AlertmanagerSink::Create(io, options, events);
  ASSERT_FALSE(sink.ok());
  EXPECT_THAT(sink.status().message(),
              HasSubstr("alertmanager: generator_url_base: expected http(s)://host"));
}

// The sink reads the time its caller gives it (the daemon's one wall clock),
// never one of its own.
TEST(AlertmanagerOptionsTest, ASinkWithoutAWallClockIsAnError) {
  boost::asio::io_context io;
  testing::CountingEvents events;
  AlertmanagerOptions options;
  options.url = "http://127.0.0.1:9093";
  auto sink = AlertmanagerSink::Create(io, options, events);
  ASSERT_FALSE(sink.ok());
  EXPECT_THAT(sink.status().message(), HasSubstr("no wall clock"));
}

}  // namespace
}  // namespace fingerprintd::sink
