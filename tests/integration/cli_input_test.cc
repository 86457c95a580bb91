// Input and output failures as the command line reports them: what could not
// be read or written is named and exits 2, and the exit codes' precedence is
// the README's ("Exit codes").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "testing/cli_runner.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kTarget = Golden("vllm_tp2_unknown_sf.log");
const std::string kHealthy = Golden("vllm_tp2_healthy.log");

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A gzip file cut before its trailer, as a copy taken mid-compression is.
fs::path TruncatedGzip(const fs::path& dir, const std::string& log = kHealthy) {
  fs::path full = dir / "full.log.gz";
  EXPECT_EQ(std::system(("gzip -c " + log + " > " + Quoted(full)).c_str()), 0);
  std::string bytes = ReadAll(full);
  fs::path cut = dir / "cut.log.gz";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() * 3 / 4);
  fs::remove(full);
  return cut;
}

TEST_F(CliTest, TruncatedGzipIsADataLossErrorNamingTheFile) {
  fs::path cut = TruncatedGzip(dir_);
  CommandResult run = Fingerprintd("replay " + Quoted(cut));
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_THAT(run.out, HasSubstr(cut.string() + ": truncated gzip stream"));
  CommandResult parse = Fingerprintd("parse " + Quoted(cut), "/dev/null");
  EXPECT_EQ(parse.exit_code, 2) << parse.out;
  EXPECT_THAT(parse.out, HasSubstr(cut.string() + ": truncated gzip stream"));
}

TEST_F(CliTest, UnreadableDirectoryExitsTwoNamingIt) {
  fs::create_directories(dir_ / "logs");
  fs::copy(kTarget, dir_ / "logs" / "0.log");
  fs::permissions(dir_ / "logs", fs::perms::none);
  CommandResult run = Fingerprintd("replay " + Quoted(dir_ / "logs"), "", Unprivileged());
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_THAT(run.out, HasSubstr((dir_ / "logs").string() + ": cannot read directory"));
}

TEST_F(CliTest, UnreadableSubdirectoryExitsTwoNamingIt) {
  fs::create_directories(dir_ / "logs" / "pod-b");
  fs::copy(kTarget, dir_ / "logs" / "a.log");
  fs::copy(kTarget, dir_ / "logs" / "pod-b" / "0.log");
  fs::permissions(dir_ / "logs" / "pod-b", fs::perms::none);
  CommandResult run = Fingerprintd("replay " + Quoted(dir_ / "logs"), "", Unprivileged());
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_THAT(run.out, HasSubstr((dir_ / "logs" / "pod-b").string() + ": cannot read directory"));
}

TEST_F(CliTest, SymlinkedDirectoryIsFollowedOnceAndALoopEnds) {
  fs::create_directories(dir_ / "real");
  fs::copy(kTarget, dir_ / "real" / "0.log");
  fs::create_directories(dir_ / "logs");
  fs::create_directory_symlink(dir_ / "real", dir_ / "logs" / "pod");      // followed
  fs::create_directory_symlink(dir_ / "real", dir_ / "logs" / "pod-too");  // same dir: once
  fs::create_directory_symlink(dir_ / "logs", dir_ / "real" / "up");       // a loop
  CommandResult run = Fingerprintd("replay " + Quoted(dir_ / "logs"));
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("1 source(s), 1 file(s)"));
  EXPECT_THAT(run.out, HasSubstr("deepgemm-unknown-sf-transformation (confirmed)"));
}

TEST_F(CliTest, FailOnFindingBeatsAReadErrorWhichIsStillReported) {
  fs::path cut = TruncatedGzip(dir_);
  CommandResult found = Fingerprintd("replay --fail-on critical " + kTarget + " " + Quoted(cut));
  EXPECT_EQ(found.exit_code, 1) << found.out;
  EXPECT_THAT(found.out, HasSubstr("truncated gzip stream"));
  CommandResult nothing = Fingerprintd("replay --fail-on critical " + kHealthy + " " + Quoted(cut));
  EXPECT_EQ(nothing.exit_code, 2) << nothing.out;
}

TEST_F(CliTest, FailedWriteToStdoutExitsTwoWithAMessage) {
  for (const std::string& command : {"replay --quiet " + kTarget, "parse " + kTarget,
                                     std::string("rules test"), std::string("rules check")}) {
    CommandResult run = Fingerprintd(command, "/dev/full");
    EXPECT_EQ(run.exit_code, 2) << command << "\n" << run.out;
    EXPECT_THAT(run.out, HasSubstr("writing to stdout failed: No space left on device")) << command;
  }
  // Even with --fail-on: the incidents were not delivered.
  EXPECT_EQ(Fingerprintd("replay --quiet --fail-on critical " + kTarget, "/dev/full").exit_code, 2);
}

TEST_F(CliTest, YearlessLogIsDatedByItsFileMtimeAcrossNewYear) {
  // Written from Dec 31 to Jan 1, last modified on Jan 1 2025: the December
  // lines are 2024, never after the file was written.
  fs::path log = dir_ / "0.log";
  std::ofstream(log) << "INFO 12-31 23:50:00 [a.py:1] before midnight\n"
                        "INFO 01-01 00:10:00 [a.py:1] after midnight\n";
  ASSERT_EQ(std::system(("touch -d '2025-01-01 01:00:00 UTC' " + Quoted(log)).c_str()), 0);
  CommandResult run = Fingerprintd("parse " + Quoted(log));
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("1\t2024-12-31T23:50:00Z\t"));
  EXPECT_THAT(run.out, HasSubstr("2\t2025-01-01T00:10:00Z\t"));
}

TEST_F(CliTest, YearlessStdinIsNotDatedAfterNow) {
  // The target failure pasted on stdin, stamped the last second of a year.
  std::ofstream(dir_ / "paste.log")
      << "ERROR 12-31 23:59:59 [core.py:1] RuntimeError: Assertion error "
         "(.../deepgemm-src/csrc/apis/layout.hpp:60): Unknown SF transformation\n";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  int year = utc.tm_year + 1900;
  // Dec 31 23:59:59 is after now (and the 14 h zone allowance) unless today is Dec 31.
  if (!(utc.tm_mon == 11 && utc.tm_mday == 31 && utc.tm_hour >= 10)) --year;
  CommandResult run =
      Fingerprintd("replay --quiet --format jsonl - < " + Quoted(dir_ / "paste.log"));
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out,
              HasSubstr("\"first_seen\":\"" + std::to_string(year) + "-12-31T23:59:59Z\""));
}

}  // namespace
}  // namespace fingerprintd::testing
