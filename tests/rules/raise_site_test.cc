// Where a failure was raised: ExceptionBlock::RaiseSite and the `raised_in`
// clause that families by place read, and the `kind: stop` / `consequence`
// keys the loader takes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fingerprintd/rules.h"
#include "fingerprintd/traceback.h"
#include "rules/clause_match.h"

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
