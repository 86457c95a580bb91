// The same new failure on three deployments is three incidents (each pages on
// its own) with ONE signature, counted as one failure seen in three places;
// `rules draft` turns it into a rule that `rules test` passes.
#include "source/rule_draft.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "correlate/signature.h"
#include "fingerprintd/rules.h"
#include "fingerprintd/source.h"
#include "sink/metrics.h"
#include "testing/replay_harness.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A worker failing at start-up with an exception no rule knows, with the
// values of deployment `k` (its GPU, pid, path, address).
std::string UnknownFailure(int k) {
  const std::string head = "(Worker_TP0 pid=" + std::to_string(100 + k) + ") ERROR 07-0" +
                           std::to_string(k + 1) + " 12:00:00 [multiproc_executor.py:751] ";
  return head + "WorkerProc failed to start.\n" + head + "Traceback (most recent call last):\n" +
         head + "  File \"/opt/venv" + std::to_string(k) +
         "/vllm/v1/worker/gpu_worker.py\", line 240, in init_device\n" + head +
         "  File \"/opt/venv" + std::to_string(k) +
         "/vllm/platforms/cuda.py\", line 410, in get_device_uuid\n" + head +
         "pynvml.NVMLError_Unknown: Unknown Error on device " + std::to_string(k + 2) +
         " at 0x7f00aa1" + std::to_string(k) + "\n";
}

class RuleDraftTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fingerprintd-draft-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "logs");
    for (int k = 0; k < 3; ++k) {
      std::ofstream(dir_ / "logs" / ("deployment-" + std::to_string(k) + ".log"))
          << UnknownFailure(k);
    }
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(RuleDraftTest, OneUnknownFailureInThreeDeploymentsIsThreeIncidentsOfOneSignature) {
  auto r = testing::ReplayPaths({(dir_ / "logs").string()}, "(deployment-[0-9])\\.log$");
  ASSERT_EQ(r.incidents.size(), 3u) << r.jsonl;
  std::set<std::string> deployments;
  for (const correlate::Incident& i : r.incidents) {
    EXPECT_EQ(i.rule->rule_class, "unknown");
    EXPECT_EQ(i.signature, r.incidents[0].signature) << r.jsonl;
    EXPECT_EQ(i.signature_version, correlate::kSignatureVersion);
    deployments.insert(i.deployment);
  }
  EXPECT_EQ(deployments.size(), 3u);
  EXPECT_THAT(r.jsonl, HasSubstr("\"signature\":\"" + r.incidents[0].signature + "\""));

  sink::Metrics metrics("test");
  for (const correlate::Incident& i : r.incidents) {
    metrics.OnIncident(correlate::IncidentChange::kOpened, i);
  }
  EXPECT_THAT(metrics.Serialize(0),
              HasSubstr("fingerprintd_signature_deployments{class=\"unknown\",signature=\"" +
                        r.incidents[0].signature + "\"} 3"));
  correlate::Incident closed = r.incidents[1];
  closed.closed = correlate::CloseReason::kRecovered;
  metrics.OnIncident(correlate::IncidentChange::kClosed, closed);
  EXPECT_THAT(metrics.Serialize(0),
              HasSubstr("fingerprintd_signature_deployments{class=\"unknown\",signature=\"" +
                        r.incidents[0].signature + "\"} 2"));
}

TEST_F(RuleDraftTest, TheDraftOfAnUnknownIncidentPassesTheRuleTestsInACopyOfThePack) {
  auto r = testing::ReplayPaths({(dir_ / "logs" / "deployment-1.log").string()});
  ASSERT_EQ(r.incidents.size(), 1u) << r.jsonl;
  const std::string id = r.incidents[0].incident_id;
  auto incident = FindIncident(r.jsonl, id);
  ASSERT_TRUE(incident.ok()) << incident.status().message();
  auto draft = DraftRule(*incident);
  ASSERT_TRUE(draft.ok()) << draft.status().message();
  EXPECT_THAT(*draft, HasSubstr("pynvml\\.NVMLError_Unknown: Unknown\\ Error\\ on\\ device"));
  EXPECT_THAT(*draft, HasSubstr("class: unknown   # choose:"));

  // A copy of the pack with the draft in it.
  fs::create_directories(dir_ / "pack");
  for (const auto& entry : fs::directory_iterator(fs::path(FINGERPRINTD_SOURCE_DIR) / "rules")) {
    if (entry.path().extension() == ".yaml")
      fs::copy_file(entry.path(), dir_ / "pack" / entry.path().filename());
  }
  const std::string rule_id = draft->substr(draft->find("\nid: ") + 5, 14);
  std::ofstream(dir_ / "pack" / (rule_id + ".yaml")) << *draft;
  auto pack = rules::LoadRuleDir((dir_ / "pack").string());
  ASSERT_TRUE(pack.ok()) << pack.status().message() << "\n" << *draft;
  int drafts = 0;
  for (const RuleTestResult& t : RunRuleTests(*pack, 2026)) {
    EXPECT_TRUE(t.passed) << t.rule << ": " << t.test << t.detail << "\n" << *draft;
    drafts += t.rule == rule_id;
  }
  EXPECT_EQ(drafts, 3);
  EXPECT_TRUE(LintRuleTests(**pack).empty());
}

TEST(RuleDraftErrorsTest, AnIdNotInTheLogAndALineThatIsNoIncidentAreNamed) {
  EXPECT_EQ(FindIncident("{\"incident_id\":\"inc-1\"}\n", "inc-2").status().message(),
            "inc-2: no such incident");
  EXPECT_EQ(FindIncident("{\"incident_id\":\"inc-1\"}\nnot json\n", "inc-1").status().message(),
            "line 2: not a JSON incident");
  EXPECT_FALSE(DraftRule("[]").ok());
}

}  // namespace
}  // namespace fingerprintd::source
