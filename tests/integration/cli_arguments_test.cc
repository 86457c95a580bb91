// Command-line arguments as a new user types them: the README's forms work,
// and every mistake is an exit 2 whose message names what was wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "testing/cli_runner.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kTarget = Golden("vllm_tp2_unknown_sf.log");
const std::string kHealthy = Golden("vllm_tp2_healthy.log");

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(CliTest, ReplayLabelFollowedByPathsReadsEveryPath) {
  for (const std::string label : {"--label deployment=x", "--label=deployment=x"}) {
    CommandResult run = Fingerprintd("replay " + label + " " + kHealthy + " " + kTarget);
    EXPECT_EQ(run.exit_code, 0) << label << "\n" << run.out;
    EXPECT_THAT(run.out, HasSubstr("2 source(s), 2 file(s)")) << label;
    EXPECT_THAT(run.out, HasSubstr("deepgemm-unknown-sf-transformation (confirmed)")) << label;
  }
}

TEST_F(CliTest, PathWithAnEqualsSignAfterALabelIsReadAsAPath) {
  std::filesystem::copy(kTarget, dir_ / "a=b.log");
  CommandResult run = Fingerprintd("replay --format jsonl --label team=ml " +
                                   Quoted(dir_ / "a=b.log") + " " + kHealthy);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("2 source(s), 2 file(s)"));
  EXPECT_THAT(run.out, HasSubstr("\"labels\":{\"team\":\"ml\"}"));
  EXPECT_THAT(run.out, HasSubstr("\"rule\":\"deepgemm-unknown-sf-transformation\""));
}

TEST_F(CliTest, LabelWhoseKeyIsAPathIsAnError) {
  CommandResult run = Fingerprintd("replay --label dir/a=b.log " + kTarget);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.out, HasSubstr("--label: 'dir/a' in 'dir/a=b.log' is not a label name"));
}

TEST_F(CliTest, EmptyFailOnIsAnErrorNotADisabledGate) {
  CommandResult run = Fingerprintd("replay --quiet --fail-on '' " + kTarget);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_THAT(run.out, HasSubstr("--fail-on: expected critical, error, warning or info, got ''"));
}

TEST_F(CliTest, EmptyRulesOrDeploymentFromIsAnErrorNotTheDefault) {
  for (const std::string option : {"--rules", "--deployment-from"}) {
    CommandResult run = Fingerprintd("replay " + option + " '' " + kTarget);
    EXPECT_EQ(run.exit_code, 2) << option << "\n" << run.out;
    EXPECT_THAT(run.out, HasSubstr(option + ": empty value"));
  }
}

TEST_F(CliTest, DeploymentFromWithoutACaptureGroupIsAnError) {
  CommandResult run = Fingerprintd("replay --deployment-from 'golden/' " + kTarget);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_THAT(run.out, HasSubstr("--deployment-from: 'golden/' has no capture group"));
}

TEST_F(CliTest, DeploymentFromThatCapturesNothingWarnsOnce) {
  CommandResult run =
      Fingerprintd("replay --deployment-from '/pods/([^/]+)/' " + kTarget + " " + kHealthy);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(Count(run.out,
                  "warning: --deployment-from '/pods/([^/]+)/' captured nothing from 2 of "
                  "2 source(s)"),
            1u)
      << run.out;
  CommandResult matched =
      Fingerprintd("replay --deployment-from '(vllm_tp2)_' " + kTarget + " " + kHealthy);
  EXPECT_THAT(matched.out, Not(HasSubstr("warning")));
}

TEST_F(CliTest, EmptyDeploymentLabelIsAnError) {
  CommandResult run = Fingerprintd("replay --label deployment= " + kTarget);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_THAT(run.out, HasSubstr("--label: 'deployment=' has an empty value"));
}

TEST_F(CliTest, RepeatedLabelKeyIsAnError) {
  CommandResult run = Fingerprintd("replay --label deployment=a --label deployment=b " + kTarget);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_THAT(run.out,
              HasSubstr("--label: 'deployment' given twice ('deployment=a', 'deployment=b')"));
}

TEST_F(CliTest, ZeroMaxLineBytesIsAnErrorNotASilentDropOfEveryLine) {
  CommandResult run = Fingerprintd("replay --max-line-bytes 0 " + kTarget);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_THAT(run.out, HasSubstr("--max-line-bytes: expected a whole number from 1 to"));
  EXPECT_THAT(run.out, HasSubstr("got '0'"));
}

TEST_F(CliTest, NonNumericThreadsSaysWhatWasWrong) {
  CommandResult run = Fingerprintd("replay --threads abc " + kTarget);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_THAT(run.out, HasSubstr("--threads: expected a whole number from 1 to 256, got 'abc'"));
}

TEST_F(CliTest, UnknownSubcommandIsNamed) {
  CommandResult top = Fingerprintd("bogus");
  EXPECT_EQ(top.exit_code, 2);
  EXPECT_THAT(top.out, HasSubstr("fingerprintd: unknown command 'bogus' (expected one of: replay"));
  CommandResult rules = Fingerprintd("rules bogus");
  EXPECT_EQ(rules.exit_code, 2);
  EXPECT_THAT(rules.out,
              HasSubstr("fingerprintd rules: unknown command 'bogus' (expected one of: check, "
                        "test, draft)"));
}

}  // namespace
}  // namespace fingerprintd::testing
