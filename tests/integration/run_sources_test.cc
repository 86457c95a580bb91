// `fingerprintd run` against the source failures operators reported (issue
// 29), each named after it: a log created while the daemon was stopped (a
// rollout), `kill -9` right after a new log appeared, a chmod 000 log, a glob
// that matches nothing, a deleted log still being written, a delete and
// recreate in the middle of a traceback. The real binary on real files,
// every wait a poll with a deadline; a user's view: the incident log,
// /readyz, /metrics and the daemon's own log.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "testing/http_client.h"
#include "testing/privileges.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

using namespace run_harness;  // NOLINT(build/namespaces): test-only helpers

constexpr uint64_t kGoldenLines = 228;

class RunSourcesTest : public RunFixture {
 protected:
  std::string Checkpoint() const { return ReadFile(dir_ / "checkpoints" / "checkpoint.json"); }
  // `run --config` with checkpoints only when asked for (checkpoint_interval 1h).
  std::unique_ptr<DaemonProcess> StartWithConfig(const std::string& start_at) {
    const fs::path config = dir_ / "fingerprintd.yaml";
    std::ofstream(config) << "sources:\n"
                          << "  - type: file\n"
                          << "    paths: [\"" << (dir_ / "logs" / "*.log").string() << "\"]\n"
                          << "    start_at: " << start_at << "\n"
                          << "checkpoint_dir: " << (dir_ / "checkpoints").string() << "\n"
                          << "checkpoint_interval: 1h\n"
                          << "http: {listen: \"127.0.0.1:0\"}\n"
                          << "incidents: {path: \"" << Incidents().string() << "\"}\n";
    return std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--config", config.string(), "--label", "deployment=qwen3"},
        dir_ / "daemon.err");
  }
};

// A DaemonSet rollout: the daemon is stopped, a new worker's log is written
// whole, the daemon comes back with start_at: end. The log did not exist
// when the daemon first ran, so it is read from its start.
TEST_F(RunSourcesTest, ALogCreatedWhileTheDaemonWasStoppedIsReadFromItsStart) {
  Append("older.log", "a worker log that was there before the daemon\n");
  auto daemon = Start("end");
  ASSERT_TRUE(WaitFor([&] { return Checkpoint().find("older.log") != std::string::npos; }))
      << Stderr();
  EXPECT_EQ(daemon->Kill(SIGTERM), 0);
  Append("w.log", Slice(lines_, 0, lines_.size()));  // the new pod, while the daemon was stopped
  daemon = Start("end");
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  EXPECT_TRUE(StderrHas("created while the daemon was stopped")) << Stderr();
  EXPECT_EQ(Sample("fingerprintd_files_opened_total{start=\"born_while_stopped\"}"), 1);
  StopSummary summary = Stop(daemon);
  ExpectOneCompleteIncident();
  EXPECT_EQ(summary.lines, kGoldenLines);
}

// `kill -9` after a new log's first lines were read and before any periodic
// checkpoint (its interval is an hour): the log is in the checkpoint at once,
// so the restart resumes it instead of opening it at its end.
TEST_F(RunSourcesTest, KillNineRightAfterANewLogAppearsDoesNotSkipItsFirstLines) {
  auto daemon = StartWithConfig("end");
  ASSERT_TRUE(WaitFor([&] { return StderrHas("running"); })) << Stderr();
  Append("w.log", Slice(lines_, 0, 118));  // rank 0 failed, rank 1 not yet
  ASSERT_TRUE(WaitFor([&] { return Checkpoint().find("w.log") != std::string::npos; })) << Stderr();
  EXPECT_EQ(daemon->Kill(SIGKILL), -1);
  Append("w.log", Slice(lines_, 118, lines_.size()));
  daemon = StartWithConfig("end");
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  EXPECT_TRUE(StderrHas("resuming from its checkpoint")) << Stderr();
  EXPECT_EQ(daemon->Kill(SIGTERM), 0);
  ExpectOneCompleteIncident();
}

// chmod 000 on a worker log. The suite runs as root, which reads it anyway,
// so the daemon is started without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
// (testing/privileges.h), as a daemon of another user or a container with
// its capabilities dropped is.
TEST_F(RunSourcesTest, AChmod000LogMakesReadyzNameItAndIsReadOnceReadable) {
  Append("w.log", Slice(lines_, 0, lines_.size()));
  fs::permissions(dir_ / "logs" / "w.log", fs::perms::none);
  std::vector<std::string> args = {
      "--http",           "127.0.0.1:0", "--label",
      "deployment=qwen3", "--incidents", Incidents().string(),
      "--start-at",       "beginning",   (dir_ / "logs" / "*.log").string()};
  auto daemon = std::make_unique<DaemonProcess>(args, dir_ / "daemon.err", DropDacOverrideForExec);
  ASSERT_TRUE(WaitFor([&] { return HttpPort() != 0 && Get("/readyz").status == 503; })) << Stderr();
  HttpReply ready = Get("/readyz");
  EXPECT_THAT(ready.body,
              ::testing::HasSubstr((dir_ / "logs" / "w.log").string() + ": permission_denied"));
  EXPECT_GE(Sample("fingerprintd_source_errors_total{reason=\"permission_denied\"}"), 1);
  EXPECT_EQ(Sample("fingerprintd_sources_open{type=\"file\"}"), 0);
  EXPECT_EQ(StderrCount("permission_denied"), 1u) << Stderr();  // logged once
  EXPECT_FALSE(StderrHas("tailing")) << Stderr();
  // The status page lists it as what cannot be read.
  EXPECT_THAT(
      Get("/").body,
      ::testing::HasSubstr("<tr class=\"problem\"><td><code>" + (dir_ / "logs" / "w.log").string() +
                           "</code></td><td>file</td><td>permission_denied"));
  fs::permissions(dir_ / "logs" / "w.log", fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  ASSERT_TRUE(WaitFor([&] { return Get("/readyz").status == 200; })) << Get("/readyz").body;
  // Then as a file read, with the time of its last line.
  const std::string page = Get("/").body;
  EXPECT_THAT(page, ::testing::HasSubstr("<tr class=\"source\"><td><code>" +
                                         (dir_ / "logs" / "w.log").string() +
                                         "</code></td><td>file</td><td>reading</td><td>"));
  EXPECT_THAT(page, ::testing::HasSubstr(" s ago)"));
  EXPECT_THAT(page, ::testing::Not(::testing::HasSubstr("class=\"problem\"")));
  StopSummary summary = Stop(daemon);
  ExpectOneCompleteIncident();
  EXPECT_EQ(summary.lines, kGoldenLines);
}

TEST_F(RunSourcesTest, AGlobThatMatchesNothingMakesReadyzNameItUntilALogAppears) {
  auto daemon = Start("end");
  const std::string glob = (dir_ / "logs" / "*.log").string();
  ASSERT_TRUE(WaitFor([&] { return HttpPort() != 0 && Get("/readyz").status == 503; })) << Stderr();
  EXPECT_THAT(Get("/readyz").body, ::testing::HasSubstr(glob + ": no_match"));
  EXPECT_EQ(Sample("fingerprintd_source_globs_matched{glob=\"" + glob + "\"}"), 0);
  EXPECT_GE(Sample("fingerprintd_source_errors_total{reason=\"no_match\"}"), 1);
  Append("w.log", Slice(lines_, 0, lines_.size()));
  ASSERT_TRUE(WaitFor([&] { return Get("/readyz").status == 200; })) << Stderr();
  EXPECT_EQ(Sample("fingerprintd_source_globs_matched{glob=\"" + glob + "\"}"), 1);
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  Stop(daemon);
  ExpectOneCompleteIncident();
}

// The worker's log is deleted (a cleanup, a careless `rm`) while the worker
// goes on writing into it: rank 1's failure comes after the deletion.
TEST_F(RunSourcesTest, ADeletedLogStillBeingWrittenIsReadToItsEnd) {
  auto daemon = Start();
  std::ofstream writer(dir_ / "logs" / "w.log", std::ios::binary);
  writer << Slice(lines_, 0, 118) << std::flush;
  ASSERT_TRUE(WaitFor([&] { return StderrHas("tailing"); })) << Stderr();
  fs::remove(dir_ / "logs" / "w.log");
  ASSERT_TRUE(WaitFor([&] { return StderrHas("was deleted and is still written"); })) << Stderr();
  writer << Slice(lines_, 118, lines_.size()) << std::flush;
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  writer.close();
  StopSummary summary = Stop(daemon);
  ExpectOneCompleteIncident();
  EXPECT_EQ(summary.lines, kGoldenLines);
}

// Deleted and created again between two lines of rank 0's traceback: the new
// file goes on with the same stream, so the traceback and the incident are
// whole, as replay has them.
TEST_F(RunSourcesTest, DeleteAndRecreateMidTracebackGivesOneIncidentOfTwoWorkers) {
  auto daemon = Start();
  Append("w.log", Slice(lines_, 0, 105));  // both workers' tracebacks are open here
  ASSERT_TRUE(WaitFor([&] { return StderrHas("tailing"); })) << Stderr();
  fs::remove(dir_ / "logs" / "w.log");
  ASSERT_TRUE(WaitFor([&] { return StderrHas("was deleted"); })) << Stderr();
  Append("w.log", Slice(lines_, 105, lines_.size()));
  ASSERT_TRUE(WaitFor([&] { return HasCompleteIncident(); })) << Stderr();
  StopSummary summary = Stop(daemon);
  ExpectOneCompleteIncident();
  EXPECT_EQ(summary.lines, kGoldenLines);
  EXPECT_FALSE(StderrHas("ended (deleted")) << Stderr();
}

// Issue 29: a stall is a file growing while nothing is read, not a quiet
// log. A daemon that does not read (no inotify, a poll an hour) shows on
// /metrics the bytes written since; a reload reads them and the lag is 0.
TEST_F(RunSourcesTest, BytesWrittenAndNotReadShowAsTheFilesLagUntilTheyAreRead) {
  Append("w.log", Slice(lines_, 0, 10));
  auto daemon = RunFixture::StartWithConfig("tailer: {inotify: false, poll_interval: 1h}\n");
  const std::string lag =
      "fingerprintd_source_lag_bytes{source=\"" + (dir_ / "logs" / "w.log").string() + "\"}";
  ASSERT_TRUE(WaitFor([&] { return HttpPort() != 0 && Sample(lag) == 0; })) << Stderr();
  const std::string more = Slice(lines_, 10, 20);
  Append("w.log", more);
  EXPECT_TRUE(WaitFor([&] { return Sample(lag) == static_cast<double>(more.size()); }))
      << Sample(lag) << "\n"
      << Stderr();
  daemon->Signal(SIGHUP);  // the engine is rebuilt: its file source reads to the end
  EXPECT_TRUE(WaitFor([&] { return Sample(lag) == 0; })) << Sample(lag) << "\n" << Stderr();
  EXPECT_TRUE(StderrHas(" source(s) read again")) << Stderr();  // the restore's total
  EXPECT_EQ(Sample("fingerprintd_source_lag_bytes{source=\"_other\"}"), -1);
  Stop(daemon);
}

}  // namespace
}  // namespace fingerprintd::testing
