// The incident log as a reader sees it: one replay-identical JSON object per
// opened/updated revision, nothing for a close, and no revision written twice
// to the same file across a restart.
#include "sink/jsonl_sink.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/replay_harness.h"
#include "testing/scratch_path.h"

namespace fingerprintd::sink {
namespace {

namespace fs = std::filesystem;
using correlate::IncidentChange;

class JsonlSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = testing::ScratchPath("jsonl").string() + ".jsonl";
    fs::remove(path_);
  }
  void TearDown() override { fs::remove(path_); }

  correlate::Incident MakeIncident(const std::string& id, int revision) {
    auto rules = testing::EmbeddedRules();
    correlate::Incident incident;
    incident.incident_id = id;
    const rules::Rule* rule = rules->Find("deepgemm-unknown-sf-transformation");
    incident.rule = std::shared_ptr<const rules::Rule>(rules, rule);
    incident.deployment = "qwen3";
    incident.revision = revision;
    return incident;
  }
  std::vector<std::string> Lines() const {
    std::ifstream in(path_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  std::string path_;
};

TEST_F(JsonlSinkTest, EachRevisionIsOneLineTheCloseIncluded) {
  auto sink = JsonlIncidentSink::Open(path_);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  correlate::Incident incident = MakeIncident("inc-1", 1);
  (*sink)->OnIncident(IncidentChange::kOpened, incident);
  incident.revision = 2;
  (*sink)->OnIncident(IncidentChange::kUpdated, incident);
  EXPECT_EQ(Lines().back(), correlate::IncidentToJson(incident));  // the replay object, as is
  incident.revision = 3;
  incident.closed = correlate::CloseReason::kRecovered;
  incident.closed_us = 1'770'000'000'000'000;
  (*sink)->OnIncident(IncidentChange::kClosed, incident);
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 3u) << "the close is a revision of its own";
  auto closed = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(closed["closed"], "recovered");
  EXPECT_EQ(closed["closed_at"], "2026-02-02T02:40:00Z");
  EXPECT_EQ(closed["revision"], 3);
  auto json = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(json["schema"], "fingerprintd/incident/v1");
  EXPECT_EQ(json["revision"], 1);
}

TEST_F(JsonlSinkTest, ARevisionAlreadyInTheFileIsNotWrittenAgainAfterARestart) {
  {
    auto sink = JsonlIncidentSink::Open(path_);
    ASSERT_TRUE(sink.ok());
    (*sink)->OnIncident(IncidentChange::kOpened, MakeIncident("inc-1", 1));
  }
  auto sink = JsonlIncidentSink::Open(path_);
  ASSERT_TRUE(sink.ok());
  (*sink)->OnIncident(IncidentChange::kOpened, MakeIncident("inc-1", 1));  // re-decided
  (*sink)->OnIncident(IncidentChange::kUpdated, MakeIncident("inc-1", 2));
  EXPECT_EQ(Lines().size(), 2u);
  EXPECT_EQ((*sink)->duplicates_skipped(), 1u);
}

TEST_F(JsonlSinkTest, ATornLastLineFromACrashIsIgnoredAndAppendedAfter) {
  std::ofstream(path_) << "{\"incident_id\":\"inc-0\",\"revi";
  auto sink = JsonlIncidentSink::Open(path_);
  ASSERT_TRUE(sink.ok());
  (*sink)->OnIncident(IncidentChange::kOpened, MakeIncident("inc-1", 1));
  EXPECT_EQ((*sink)->lines_written(), 1u);
}

TEST_F(JsonlSinkTest, ATornLastLineIsCutBackSoTheNextRecordStartsALineOfItsOwn) {
  const std::string whole = correlate::IncidentToJson(MakeIncident("inc-0", 1)) + "\n";
  const std::string torn = "{\"incident_id\":\"inc-0\",\"revi";
  std::ofstream(path_) << whole << torn;
  auto sink = JsonlIncidentSink::Open(path_);
  ASSERT_TRUE(sink.ok());
  EXPECT_EQ((*sink)->torn_bytes_cut(), torn.size());
  (*sink)->OnIncident(IncidentChange::kOpened, MakeIncident("inc-1", 1));
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
}

// A full disk: the record is kept, nothing half-written stays in the file,
// and once space returns it is written whole, once, in order.
TEST_F(JsonlSinkTest, AFullDiskKeepsTheRecordsAndWritesThemWholeWhenSpaceReturns) {
  const std::string old_record = correlate::IncidentToJson(MakeIncident("inc-0", 1)) + "\n";
  std::ofstream(path_) << old_record;
  auto sink = JsonlIncidentSink::Open(path_);
  ASSERT_TRUE(sink.ok());
  // The file may grow by 100 bytes only: the next record is cut short by
  // the kernel (EFBIG, a full disk's ENOSPC in effect).
  struct sigaction ignore {
  }, saved_action{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGXFSZ, &ignore, &saved_action);
  rlimit saved{};
  ::getrlimit(RLIMIT_FSIZE, &saved);
  rlimit small = saved;
  small.rlim_cur = old_record.size() + 100;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  (*sink)->OnIncident(IncidentChange::kOpened, MakeIncident("inc-1", 1));
  (*sink)->OnIncident(IncidentChange::kUpdated, MakeIncident("inc-1", 2));
  (*sink)->Retry();
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::sigaction(SIGXFSZ, &saved_action, nullptr);
  EXPECT_EQ((*sink)->pending(), 2u);
  EXPECT_GE((*sink)->write_errors(), 3u);
  EXPECT_THAT((*sink)->error(), ::testing::HasSubstr("too large"));
  EXPECT_EQ(fs::file_size(path_), old_record.size()) << "the partial record was cut back";
  (*sink)->Retry();  // space again
  EXPECT_EQ((*sink)->pending(), 0u);
  EXPECT_EQ((*sink)->error(), "");
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 3u);
  for (const std::string& line : lines) ASSERT_TRUE(nlohmann::json::accept(line)) << line;
  EXPECT_EQ(nlohmann::json::parse(lines[1])["revision"], 1);
  EXPECT_EQ(nlohmann::json::parse(lines[2])["revision"], 2);
  (*sink)->OnIncident(IncidentChange::kUpdated, MakeIncident("inc-1", 2));  // decided again
  EXPECT_EQ(Lines().size(), 3u);
}

TEST_F(JsonlSinkTest, AnUnwritablePathIsAnErrorNamingIt) {
  auto sink = JsonlIncidentSink::Open("/nonexistent-dir/incidents.jsonl");
  ASSERT_FALSE(sink.ok());
  EXPECT_THAT(sink.status().message(), ::testing::HasSubstr("/nonexistent-dir/incidents.jsonl"));
}

}  // namespace
}  // namespace fingerprintd::sink
