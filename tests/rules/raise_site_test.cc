// Where a failure was raised: ExceptionBlock::RaiseSite and the `raised_in`
// clause that families by place read, and the `kind: stop` / `consequence`
// keys the loader takes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fingerprintd/rules.h"
#include "fingerprintd/traceback.h"
#include "rules/clause_match.h"
#include "testing/replay_harness.h"

namespace fingerprintd::rules {
namespace {

using ::testing::HasSubstr;

Frame At(std::string file, std::string function) {
  Frame f;
  f.file = std::move(file);
  f.function = std::move(function);
  return f;
}

constexpr const char* kFacts = "facts: []\nkernel_support: []\n";

StatusOr<std::shared_ptr<const RuleSet>> LoadOne(const std::string& id, const std::string& text) {
  return LoadRuleTexts({{"rules/facts.yaml", kFacts}, {"rules/" + id + ".yaml", text}});
}

TEST(RaiseSiteTest, TorchsCallWrappersAndTheStandardLibraryArePassedOver) {
  ExceptionBlock block;
  block.frames = {
      At("/sgl/python/sglang/srt/managers/scheduler.py", "run_scheduler_process"),
      At("/sgl/python/sglang/srt/models/deepseek_v2.py", "forward"),
      At("/venv/lib/python3.10/site-packages/torch/nn/modules/module.py", "_call_impl"),
      At("/venv/lib/python3.10/site-packages/torch/utils/_contextlib.py", "decorate_context"),
      At("/usr/lib/python3.10/functools.py", "wrapper"),
  };
  ASSERT_NE(block.RaiseSite(), nullptr);
  EXPECT_EQ(block.RaiseSite()->function, "forward");
}

TEST(RaiseSiteTest, PydanticsValidatorsAreNotWhereAConfigCheckFailed) {
  ExceptionBlock block;
  block.frames = {
      At("/venv/lib/python3.12/site-packages/vllm/engine/arg_utils.py", "create_engine_config"),
      At("/venv/lib/python3.12/site-packages/pydantic/_internal/_dataclasses.py", "__init__"),
  };
  ASSERT_NE(block.RaiseSite(), nullptr);
  EXPECT_EQ(block.RaiseSite()->function, "create_engine_config");
}

TEST(RaiseSiteTest, OnlyPassThroughFramesGiveTheInnermostAndNoFramesNothing) {
  ExceptionBlock block;
  EXPECT_EQ(block.RaiseSite(), nullptr);
  block.frames = {At("<frozen runpy>", "_run_module_as_main")};
  ASSERT_NE(block.RaiseSite(), nullptr);
  EXPECT_EQ(block.RaiseSite()->function, "_run_module_as_main");
}

TEST(RaisedInClauseTest, TheRaiseSiteDecidesAndAFramelessBlockCannotTell) {
  auto pack = LoadOne("code-error", R"(id: code-error
title: t
class: model_bug
severity: error
family: true
sequence:
  - id: symptom
    level: ERROR
    patterns: ['^TypeError: ']
    symptom: true
traceback:
  exception: '^TypeError$'
  raised_in: {file: '[/\\]models[/\\]', function: '^[^<]'}
explanation: x
remediation: [a, b]
)");
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  const TracebackClause& clause = *(*pack)->rules()[0].traceback;
  ASSERT_TRUE(clause.raised_in.has_value());

  ExceptionBlock in_model;
  in_model.type = "TypeError";
  in_model.frames = {At("/v/vllm/v1/worker/gpu_worker.py", "load_model"),
                     At("/v/vllm/model_executor/models/x.py", "__init__")};
  EXPECT_TRUE(MatchesClause(clause, in_model, ""));

  ExceptionBlock in_library = in_model;
  in_library.frames.back() = At("/v/somekernels/gemm.py", "run");
  EXPECT_FALSE(MatchesClause(clause, in_library, ""));
  EXPECT_FALSE(RaisedInAllows(clause, in_library));

  ExceptionBlock at_import = in_model;
  at_import.frames.back() = At("/v/vllm/model_executor/models/x.py", "<module>");
  EXPECT_FALSE(MatchesClause(clause, at_import, ""));

  ExceptionBlock pasted;
  pasted.type = "TypeError";
  EXPECT_FALSE(RaisedInAllows(clause, pasted));
}

// A family by place is decided by where the exception was raised: a logged
// message with no traceback after it says nothing of that, so the rule does
// not hit it (as it does not hit a pasted exception line without frames).
TEST(RaisedInClauseTest, ALoggedMessageWithNoTracebackCannotSayWhereItWasRaised) {
  auto pack = LoadOne("refusal-by-place", R"(id: refusal-by-place
title: t
class: config
severity: error
family: true
sequence:
  - id: symptom
    level: ERROR
    patterns: ['is not supported with']
    symptom: true
traceback:
  exception: '^ValueError$'
  raised_in: {file: '[/\\]engine[/\\]'}
explanation: x
remediation: [a, b]
)");
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  auto replay = [&](const std::string& text) {
    testing::LatestIncidentSink sink;
    NullPipelineEvents events;
    parse::ParserOptions options;
    options.current_year = 2026;
    source::ReplayText(text, "inline.log", "inline", options, *pack, events, sink);
    return testing::RuleIds(sink.Sorted());
  };
  const std::string message =
      "ERROR 05-02 10:00:01 [core.py:700] Prefix caching is not supported with this runner\n";
  EXPECT_THAT(replay(message), ::testing::IsEmpty());
  EXPECT_THAT(replay("ValueError: Prefix caching is not supported with this runner\n"),
              ::testing::IsEmpty());

  const std::string raised_in_engine =
      "Traceback (most recent call last):\n"
      "  File \"/opt/app/engine/setup.py\", line 12, in check\n"
      "ValueError: Prefix caching is not supported with this runner\n";
  EXPECT_THAT(replay(raised_in_engine), ::testing::ElementsAre("refusal-by-place"));
  std::string raised_elsewhere = raised_in_engine;
  raised_elsewhere.replace(raised_elsewhere.find("engine/"), 7, "kernels/");
  EXPECT_THAT(replay(raised_elsewhere), ::testing::IsEmpty());
}

TEST(RaisedInClauseTest, ARaisedInWithoutPatternsIsRejectedNamingTheField) {
  auto pack = LoadOne("bad", R"(id: bad
title: t
class: model_bug
severity: error
sequence:
  - id: symptom
    level: ERROR
    patterns: ['^TypeError: ']
    symptom: true
traceback:
  exception: '^TypeError$'
  raised_in: {}
explanation: x
remediation: [a, b]
)");
  ASSERT_FALSE(pack.ok());
  EXPECT_THAT(pack.status().message(), HasSubstr("traceback.raised_in"));
}

TEST(StopRuleTest, AStopRuleLoadsAndRefusesWhatDescribesAnIncident) {
  const std::string stop = R"(id: stop-line
kind: stop
title: t
window: 60s
sequence:
  - id: stop
    level: ANY
    patterns: ['received SIGTERM']
    symptom: true
)";
  auto pack = LoadOne("stop-line", stop);
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  EXPECT_EQ((*pack)->rules()[0].kind, RuleKind::kStop);
  EXPECT_EQ((*pack)->rules()[0].window_us, 60'000'000);

  auto with_class = LoadOne("stop-line", stop + "class: config\n");
  ASSERT_FALSE(with_class.ok());
  EXPECT_THAT(with_class.status().message(),
              HasSubstr("class: not allowed for kind: stop (a stop line is not a failure)"));
  auto with_consequence = LoadOne("stop-line", stop + "consequence: true\n");
  ASSERT_FALSE(with_consequence.ok());
  EXPECT_THAT(with_consequence.status().message(), HasSubstr("consequence: not allowed"));
}

TEST(StopRuleTest, AFailureRuleMayBeMarkedAConsequence) {
  auto pack = LoadOne("dead", R"(id: dead
title: t
class: distributed
severity: critical
consequence: true
sequence:
  - id: symptom
    level: ERROR
    patterns: ['EngineDeadError']
    symptom: true
explanation: x
remediation: [a, b]
)");
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  EXPECT_TRUE((*pack)->rules()[0].consequence);
}

}  // namespace
}  // namespace fingerprintd::rules
