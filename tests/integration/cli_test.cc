// The command line as users drive it: exit codes, stdin, .gz, rotated
// pieces, --fail-on, errors that name what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/cli_runner.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(CliTest, ReplayOfTheTargetExitsZeroAndPrintsOneIncident) {
  CommandResult run = Fingerprintd("replay --quiet " + Golden("vllm_tp2_unknown_sf.log"));
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("deepgemm-unknown-sf-transformation (confirmed)"));
  EXPECT_THAT(run.out, HasSubstr("2/2 affected"));
}

TEST_F(CliTest, LabelsNameTheDeploymentAndTravelWithTheIncident) {
  CommandResult run = Fingerprintd(
      "replay --quiet --format jsonl --label deployment=llama-70b --label cluster=prod " +
      Golden("vllm_tp2_unknown_sf.log"));
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("\"deployment\":\"llama-70b\",\"labels\":{\"cluster\":\"prod\"}"));
}

TEST_F(CliTest, FailOnCriticalExitsOneWhenACriticalIncidentIsFound) {
  EXPECT_EQ(Fingerprintd("replay --quiet --fail-on critical " + Golden("vllm_tp2_unknown_sf.log"))
                .exit_code,
            1);
  EXPECT_EQ(
      Fingerprintd("replay --quiet --fail-on critical " + Golden("vllm_tp2_healthy.log")).exit_code,
      0);
}

TEST_F(CliTest, BadArgumentsExitTwoWithAReason) {
  CommandResult missing = Fingerprintd("replay " + (dir_ / "nope.log").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.out, HasSubstr("nope.log: no such file or directory"));
  CommandResult severity = Fingerprintd("replay --fail-on loud " + Golden("vllm_tp2_healthy.log"));
  EXPECT_EQ(severity.exit_code, 2);
  EXPECT_THAT(severity.out, HasSubstr("--fail-on"));
  CommandResult regex =
      Fingerprintd("replay --deployment-from '(' " + Golden("vllm_tp2_healthy.log"));
  EXPECT_EQ(regex.exit_code, 2);
  EXPECT_THAT(regex.out, HasSubstr("--deployment-from: invalid RE2 pattern"));
  EXPECT_EQ(Fingerprintd("frobnicate").exit_code, 2);
}

TEST_F(CliTest, BadRuleDirectoryExitsTwoNamingFileLineRuleAndField) {
  std::filesystem::copy(SourceDir() + "/rules", dir_ / "rules");
  std::ofstream(dir_ / "rules" / "cuda-out-of-memory.yaml", std::ios::app) << "colour: blue\n";
  CommandResult check = Fingerprintd("rules check " + (dir_ / "rules").string());
  EXPECT_EQ(check.exit_code, 2);
  EXPECT_THAT(check.out, HasSubstr("cuda-out-of-memory.yaml:"));
  EXPECT_THAT(check.out, HasSubstr("rule cuda-out-of-memory: colour: unknown key"));
  CommandResult replay = Fingerprintd("replay --rules " + (dir_ / "rules").string() + " " +
                                      Golden("vllm_tp2_healthy.log"));
  EXPECT_EQ(replay.exit_code, 2);
}

TEST_F(CliTest, StdinAndGzipGiveTheSameIncidentAsTheFile) {
  std::string file = Golden("vllm_tp2_unknown_sf.log");
  CommandResult plain = Fingerprintd("replay --quiet --format jsonl --label deployment=x " + file);
  CommandResult stdin_run =
      Fingerprintd("replay --quiet --format jsonl --label deployment=x - < " + file);
  std::string gz = (dir_ / "worker.log.gz").string();
  ASSERT_EQ(std::system(("gzip -c " + file + " > " + gz).c_str()), 0);
  CommandResult gz_run = Fingerprintd("replay --quiet --format jsonl --label deployment=x " + gz);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_THAT(plain.out, HasSubstr("\"rule\":\"deepgemm-unknown-sf-transformation\""));
  auto ids = [](const std::string& out) {
    auto at = out.find("\"incident_id\"");
    return at == std::string::npos ? std::string() : out.substr(at, 40);
  };
  EXPECT_EQ(ids(stdin_run.out), ids(plain.out));
  EXPECT_EQ(ids(gz_run.out), ids(plain.out));
}

TEST_F(CliTest, RotatedPiecesAreReadOldestFirstAsOneStream) {
  // Split the failure across a kubelet rotation: the traceback starts in the
  // gzipped older piece and ends in the live file.
  std::ifstream in(Golden("vllm_tp2_unknown_sf.log"));
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t cut = all.find("Traceback (most recent call last)");
  ASSERT_NE(cut, std::string::npos);
  cut = all.find('\n', cut) + 1;
  std::filesystem::create_directories(dir_ / "pod");
  std::ofstream(dir_ / "pod" / "0.log.20260304-101500") << all.substr(0, cut);
  std::ofstream(dir_ / "pod" / "0.log") << all.substr(cut);
  ASSERT_EQ(std::system(("gzip " + (dir_ / "pod" / "0.log.20260304-101500").string()).c_str()), 0);
  CommandResult run = Fingerprintd("replay --quiet --format jsonl " + (dir_ / "pod").string());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("\"confidence\":\"confirmed\""));
  EXPECT_THAT(run.out, HasSubstr("\"affected\":2"));
}

TEST_F(CliTest, EmptyAndBinaryInputsAreHandled) {
  std::ofstream(dir_ / "empty.log").close();
  static constexpr char kBinary[] = "\0\x01\xff\xfe garbage\n\x80\x81";
  std::ofstream(dir_ / "binary.log") << std::string(kBinary, sizeof(kBinary) - 1);
  CommandResult run = Fingerprintd("replay " + (dir_ / "empty.log").string() + " " +
                                   (dir_ / "binary.log").string());
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("no incidents"));
  EXPECT_THAT(run.out, HasSubstr("2 source(s)"));
}

TEST_F(CliTest, RulesTestReportsPassedAndFailedCounts) {
  CommandResult run = Fingerprintd("rules test");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, ::testing::MatchesRegex("(.|\n)*[0-9]+ passed, 0 failed\n"));
}

// Issue 45: a long replay says how far it is, on a terminal or with
// --progress: one line rewritten with \r, cleared before the summary. Piped
// without it, stderr holds the summary alone, as before.
TEST_F(CliTest, ReplayShowsItsProgressLineWhenAskedAndNothingExtraWhenPiped) {
  const std::string examples = SourceDir() + "/examples/qwen3-fp8-rtx5090/ " + SourceDir() +
                               "/examples/moonlight-16b-h100-oom/";
  const std::string out = (dir_ / "incidents.txt").string();
  CommandResult run = Fingerprintd("replay --progress " + examples, out);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("\rreplay: "));
  EXPECT_THAT(run.out, ::testing::ContainsRegex("files [0-9]+ of 2, "));
  EXPECT_THAT(run.out, HasSubstr("\r\x1b[Kfingerprintd replay: 2 source(s)"));
  CommandResult piped = Fingerprintd("replay " + examples, out);
  EXPECT_EQ(piped.exit_code, 0) << piped.out;
  EXPECT_THAT(piped.out, ::testing::StartsWith("fingerprintd replay: 2 source(s)"));
  EXPECT_THAT(piped.out, ::testing::Not(HasSubstr("\r")));
  EXPECT_NE(Fingerprintd("replay --quiet --progress " + examples).exit_code, 0);
}

// Issue 45: an operator asked "which build is this" gets the commit, the
// build type and the architecture, not only the version.
TEST_F(CliTest, VersionPrintsTheVersionTheCommitTheBuildTypeAndTheArchitecture) {
  CommandResult run = Fingerprintd("version");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.out, ::testing::MatchesRegex(
                           "fingerprintd 0\\.1\\.0 \\(commit ([0-9a-f]{12}(-dirty)?|unknown), "
                           "[A-Za-z]+, [a-z0-9_]+\\)\n"));
}

}  // namespace
}  // namespace fingerprintd::testing
