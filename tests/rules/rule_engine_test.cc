// RuleEngine: stages in order within maxspan, the traceback clause tells the
// target from the same text raised elsewhere, vetoes, one-line pastes are
// partial, facts are extracted once, and the prefilter skips plain lines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fingerprintd/rules.h"
#include "rules/engine_fast_path.h"
#include "testing/counting_events.h"

namespace fingerprintd::rules {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kSecond = 1'000'000;
constexpr int64_t kT0 = 1'770'000'000LL * kSecond;

std::shared_ptr<const RuleSet> Pack() {
  const char* facts = R"(facts:
  - name: compute_capability
    patterns: ['Device capability (\d+\.\d+) not supported', 'CUDA capability (sm_\d+) is not compatible']
  - name: tensor_parallel_size
    patterns: ['tensor_parallel_size=(\d+)']
kernel_support:
  - library: DeepGEMM
    implements: ["9.0", "10.0"]
)";
  const char* target = R"(id: sf
title: Unknown SF
class: hardware_support
severity: critical
library: DeepGEMM
maxspan: 10m
sequence:
  - id: start
    level: INFO
    patterns: ['Loading weights took']
    required: true
  - id: warn
    level: WARNING
    patterns: ['Device capability 12\.\d not supported']
  - id: symptom
    level: ERROR
    patterns: ['Unknown SF transformation']
    symptom: true
traceback:
  exception: '^RuntimeError$'
  frames:
    - {function: '^process_weights_after_loading$'}
    - {file: 'deep_gemm\.py$', function: '^transform_sf_into_required_layout$'}
unless:
  - frame: {function: '^profile_run$'}
explanation: "{workers}; {capability}."
remediation: ["VLLM_USE_DEEP_GEMM=0"]
)";
  auto loaded = LoadRuleTexts({{"r/facts.yaml", facts}, {"r/sf.yaml", target}});
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return *loaded;
}

class Hits final : public HitSink {
 public:
  void OnHit(RuleHit hit) override { hits.push_back(std::move(hit)); }
  void OnFact(uint32_t, const std::string& name, const std::string& value) override {
    facts.emplace_back(name, value);
  }
  void OnWorkerSeen(uint32_t, const WorkerInfo&) override { ++workers_seen; }
  void OnWorkerRank(uint32_t, const WorkerInfo&) override {}
  std::vector<RuleHit> hits;
  std::vector<std::pair<std::string, std::string>> facts;
  int workers_seen = 0;
};

class RuleEngineTest : public ::testing::Test {
 protected:
  RuleEngineTest() : engine_(Pack(), 0, events_, hits_) {
    worker_.role = ProcessRole::kWorker;
    worker_.name = "Worker_TP0";
    worker_.tp = 0;
    worker_.pid = 10;
  }

  // A line of worker_, or of `worker` when given.
  void Line(Level level, std::string_view message, int64_t t, LineKind kind = LineKind::kMessage,
            const WorkerInfo* worker = nullptr) {
    LogRecord r;
    r.line_number = ++line_;
    r.offset = 100 * r.line_number;
    r.worker = worker != nullptr ? worker : &worker_;
    r.level = level;
    r.kind = kind;
    r.time_us = t;
    r.message = message;
    engine_.OnRecord(r);
  }

  // `whole`: printed from its "Traceback (most recent call last):" header on;
  // otherwise a paste that starts at a frame (its top may be cut off).
  void Traceback(std::vector<std::pair<std::string, std::string>> frames,
                 const std::string& message, int64_t t, const std::string& type = "RuntimeError",
                 bool whole = true) {
    fingerprintd::Traceback tb;
    tb.worker = &worker_;
    tb.first_line = line_ + 1;
    tb.first_offset = 100 * tb.first_line;
    ExceptionBlock block;
    block.has_header = whole;
    for (auto& [file, function] : frames) block.frames.push_back(Frame{file, 1, function, ""});
    block.type = type;
    block.message = message;
    tb.blocks.push_back(block);
    tb.complete = true;
    for (const Frame& f : block.frames) {
      Line(Level::kError, "  File \"" + f.file + "\", line 1, in " + f.function, t,
           LineKind::kFrame);
    }
    Line(Level::kError, type + ": " + message, t, LineKind::kException);
    tb.last_line = line_;
    engine_.OnTraceback(tb);
  }

  const std::vector<std::pair<std::string, std::string>> kWeightPrep = {
      {"/x/vllm/model_executor/layers/quantization/fp8.py", "process_weights_after_loading"},
      {"/x/vllm/utils/deep_gemm.py", "transform_sf_into_required_layout"}};
  const std::string kSymptom = "Assertion error (layout.hpp:60): Unknown SF transformation";

  testing::CountingEvents events_;
  Hits hits_;
  RuleEngine engine_;
  WorkerInfo worker_;
  uint64_t line_ = 0;
};

TEST_F(RuleEngineTest, FullSequenceWithMatchingFramesIsConfirmed) {
  Line(Level::kInfo, "Loading weights took 12.3 seconds", kT0);
  Line(Level::kWarning, "SymmMemCommunicator: Device capability 12.0 not supported", kT0);
  Traceback(kWeightPrep, kSymptom, kT0 + kSecond);
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 1u);
  const RuleHit& hit = hits_.hits[0];
  EXPECT_EQ(hit.confidence, Confidence::kConfirmed);
  std::vector<std::string> stages;
  for (const auto& e : hit.stages) stages.push_back(e.stage);
  EXPECT_THAT(stages, ElementsAre("start", "warn", "symptom"));
  EXPECT_EQ(hit.traceback_fingerprint.substr(0, 3), "v1:");
  EXPECT_THAT(
      hit.frames,
      ElementsAre("vllm.model_executor.layers.quantization.fp8:process_weights_after_loading",
                  "vllm.utils.deep_gemm:transform_sf_into_required_layout"));
  EXPECT_THAT(hits_.facts,
              ElementsAre(std::make_pair(std::string("compute_capability"), std::string("12.0"))));
}

TEST_F(RuleEngineTest, MissingRequiredStageMakesItPartial) {
  Traceback(kWeightPrep, kSymptom, kT0);
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kPartial);
}

TEST_F(RuleEngineTest, RequiredStageOutsideMaxspanDoesNotCount) {
  Line(Level::kInfo, "Loading weights took 12.3 seconds", kT0);
  Traceback(kWeightPrep, kSymptom, kT0 + 11 * 60 * kSecond);
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kPartial);
}

TEST_F(RuleEngineTest, StageBelowItsLevelDoesNotMatch) {
  Line(Level::kDebug, "Loading weights took 12.3 seconds", kT0);
  Traceback(kWeightPrep, kSymptom, kT0);
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kPartial);
}

TEST_F(RuleEngineTest, SameAssertionOnAnotherCodePathIsNotAHit) {
  Line(Level::kInfo, "Loading weights took 12.3 seconds", kT0);
  Traceback({{"/x/vllm/v1/worker/gpu_model_runner.py", "_dummy_run"},
             {"/x/vllm/utils/deep_gemm.py", "fp8_gemm_nt"}},
            kSymptom, kT0);
  engine_.Finish();
  EXPECT_THAT(hits_.hits, IsEmpty());
}

TEST_F(RuleEngineTest, ATracebackCutAboveItsPhaseFrameIsAPartialHit) {
  Traceback({{"/x/sglang/srt/models/deepseek_v4.py", "_setup_fp8_wo_a_scales"},
             {"/x/deep_gemm/__init__.py", "transform_sf_into_required_layout"}},
            kSymptom, kT0, "RuntimeError", /*whole=*/false);
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kPartial);
}

TEST_F(RuleEngineTest, ACutTracebackWithAVetoFrameIsStillNotAHit) {
  Traceback({{"/x/vllm/v1/worker/gpu_model_runner.py", "profile_run"},
             {"/x/vllm/utils/deep_gemm.py", "transform_sf_into_required_layout"}},
            kSymptom, kT0, "RuntimeError", /*whole=*/false);
  engine_.Finish();
  EXPECT_THAT(hits_.hits, IsEmpty());
}

TEST_F(RuleEngineTest, VetoFrameSuppressesTheHit) {
  Line(Level::kInfo, "Loading weights took 12.3 seconds", kT0);
  Traceback({{"/x/vllm/v1/worker/gpu_model_runner.py", "profile_run"},
             {"/x/vllm/model_executor/layers/quantization/fp8.py", "process_weights_after_loading"},
             {"/x/vllm/utils/deep_gemm.py", "transform_sf_into_required_layout"}},
            kSymptom, kT0);
  engine_.Finish();
  EXPECT_THAT(hits_.hits, IsEmpty());
}

TEST_F(RuleEngineTest, OneLinePasteIsPartial) {
  Traceback({}, kSymptom, kT0);
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kPartial);
  EXPECT_TRUE(hits_.hits[0].traceback_fingerprint.empty());
}

TEST_F(RuleEngineTest, SymptomWithoutAnyTracebackResolvesAtEndOfInput) {
  Line(Level::kError, "Worker failed with error 'Unknown SF transformation'", kT0);
  EXPECT_THAT(hits_.hits, IsEmpty());
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kPartial);
}

TEST_F(RuleEngineTest, CapabilityFromTorchWarningIsNormalised) {
  Line(Level::kWarning,
       "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
       "PyTorch installation.",
       kT0);
  EXPECT_THAT(hits_.facts,
              ElementsAre(std::make_pair(std::string("compute_capability"), std::string("12.0"))));
}

TEST_F(RuleEngineTest, FirstFactValueWins) {
  Line(Level::kInfo, "config: tensor_parallel_size=4, pipeline_parallel_size=1", kT0);
  Line(Level::kInfo, "config: tensor_parallel_size=8, pipeline_parallel_size=1", kT0);
  EXPECT_THAT(hits_.facts,
              ElementsAre(std::make_pair(std::string("tensor_parallel_size"), std::string("4"))));
}

TEST(RuleSetTest, PrefilterSkipsLinesWithoutThePacksLiterals) {
  auto pack = Pack();
  RuleSet::MatchScratch scratch;
  std::vector<int> matches;
  pack->Match("INFO 01-04 14:48:25 [gpu_model_runner.py:2338] Starting to load model x",
              Level::kError, &scratch, &matches);
  EXPECT_THAT(matches, IsEmpty());
  EXPECT_THAT(scratch.atoms, IsEmpty());
  pack->Match("RuntimeError: Assertion error: Unknown SF transformation", Level::kError, &scratch,
              &matches);
  EXPECT_EQ(matches.size(), 1u);
}

TEST(RuleSetTest, ErrorStagePatternsAreAskedOnlyAtErrorAndOutsideTheBufferSearch) {
  auto pack = Pack();
  RuleSet::MatchScratch scratch;
  std::vector<int> matches;
  const std::string line = "RuntimeError: Assertion error: Unknown SF transformation";
  pack->Match(line, Level::kWarning, &scratch, &matches);
  EXPECT_THAT(matches, IsEmpty());  // no ERROR stage can take a WARNING
  pack->Match(line, Level::kCritical, &scratch, &matches);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(pack->rules()[pack->Ref(matches[0]).owner].stages[pack->Ref(matches[0]).stage].level,
            Level::kError);
  // The whole-buffer search (and so the quiet-line skip) never looks for an
  // ERROR stage's literal: only lines at ERROR are asked about them.
  for (const std::string& atom : pack->Atoms()) {
    EXPECT_EQ(atom.find("unknown sf"), std::string::npos) << atom;
  }
  // Text known to hold none of Atoms() is still asked about the ERROR tier.
  pack->MatchAtomFree(line, Level::kError, &scratch, &matches);
  EXPECT_EQ(matches.size(), 1u);
}

TEST(FingerprintTest, IgnoresLineNumbersAndInstallPrefix) {
  ExceptionBlock a, b;
  a.type = b.type = "RuntimeError";
  a.frames = {{"/usr/local/lib/python3.12/dist-packages/vllm/utils/deep_gemm.py", 494, "f", ""}};
  b.frames = {{"/opt/venv/lib/python3.11/site-packages/vllm/utils/deep_gemm.py", 338, "f", ""}};
  EXPECT_EQ(TracebackFingerprint(a), TracebackFingerprint(b));
  b.frames[0].function = "g";
  EXPECT_NE(TracebackFingerprint(a), TracebackFingerprint(b));
}

TEST(FingerprintTest, RayWrapperTypeFingerprintsAsTheInnerType) {
  ExceptionBlock a, b;
  a.type = "RuntimeError";
  b.type = "ray.exceptions.RayTaskError(RuntimeError)";
  EXPECT_EQ(TracebackFingerprint(a), TracebackFingerprint(b));
}

TEST(ModuleOfFileTest, StripsPackagesRootAndExtension) {
  EXPECT_EQ(ModuleOfFile("/usr/lib/python3/dist-packages/vllm/v1/engine/core.py"),
            "vllm.v1.engine.core");
  EXPECT_EQ(ModuleOfFile("/home/me/src/vllm/vllm/utils/deep_gemm.py"), "vllm.utils.deep_gemm");
  EXPECT_EQ(ModuleOfFile("/workspace/serve.py"), "serve");
  EXPECT_EQ(ModuleOfFile("C:\\venv\\Lib\\site-packages\\torch\\nn\\module.py"), "torch.nn.module");
}

TEST_F(RuleEngineTest, RawOutputBetweenMessageSymptomAndTracebackDoesNotDecideIt) {
  Line(Level::kInfo, "Loading weights took 12.3 seconds", kT0);
  Line(Level::kError, "Worker failed with error 'Unknown SF transformation'", kT0);
  Line(Level::kUnknown, "host:1:2 [0] NCCL chatter without a level", kT0);
  EXPECT_THAT(hits_.hits, IsEmpty());
  Traceback(kWeightPrep, kSymptom, kT0);
  engine_.Finish();
  ASSERT_FALSE(hits_.hits.empty());
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kConfirmed);
}

TEST_F(RuleEngineTest, TickDecidesAMessageSymptomWhoseTracebackNeverCame) {
  Line(Level::kError, "Worker failed with error 'Unknown SF transformation'", kT0);
  engine_.Tick(kT0 + kSecond);
  EXPECT_THAT(hits_.hits, IsEmpty());
  engine_.Tick(kT0 + 6 * kSecond);
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kPartial);
}

// Ticks look only at the streams that had a symptom pending. A stream whose
// slot the parser gives to another process keeps its place in that list, and
// the new process's symptom is still decided by a tick, once.
TEST_F(RuleEngineTest, ATickDecidesTheSymptomOfAProcessInAForgottenStreamsSlot) {
  Line(Level::kError, "Worker failed with error 'Unknown SF transformation'", kT0);
  engine_.OnStreamForgotten(worker_);  // decided now, without its traceback
  ASSERT_EQ(hits_.hits.size(), 1u);
  engine_.Tick(kT0 + kSecond);  // nothing pending: the stream leaves the list
  worker_.pid = 11;             // the slot's next process
  Line(Level::kError, "Worker failed with error 'Unknown SF transformation'", kT0 + kSecond);
  engine_.Tick(kT0 + 2 * kSecond);
  EXPECT_EQ(hits_.hits.size(), 1u);
  engine_.Tick(kT0 + 7 * kSecond);
  ASSERT_EQ(hits_.hits.size(), 2u);
  EXPECT_EQ(hits_.hits[1].time_us, kT0 + kSecond);
  engine_.Tick(kT0 + 8 * kSecond);
  engine_.Finish();
  EXPECT_EQ(hits_.hits.size(), 2u);
}

TEST_F(RuleEngineTest, RepeatedMessageSymptomsAreSeparateHits) {
  Line(Level::kError, "Worker failed with error 'Unknown SF transformation'", kT0);
  Line(Level::kUnknown, "raw chatter", kT0);
  Line(Level::kError, "Worker failed with error 'Unknown SF transformation'", kT0 + 420 * kSecond);
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 2u);
  EXPECT_EQ(hits_.hits[0].time_us, kT0);
  EXPECT_EQ(hits_.hits[1].time_us, kT0 + 420 * kSecond);
}

TEST_F(RuleEngineTest, LaterLinesOfTheStreamExpireAWaitingMessageSymptom) {
  Line(Level::kError, "Worker failed with error 'Unknown SF transformation'", kT0);
  Line(Level::kUnknown, "raw chatter", kT0 + 10 * kSecond);
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kPartial);
}

TEST_F(RuleEngineTest, PastedExceptionOfAnotherTypeIsNotThisRule) {
  Traceback({}, kSymptom, kT0, "ValueError");
  engine_.Finish();
  EXPECT_THAT(hits_.hits, IsEmpty());
}

TEST_F(RuleEngineTest, AStreamIsQuietOnlyOnceSeenWithNothingWaiting) {
  EXPECT_FALSE(RuleEngine::FastPath::AbsorbQuietRecord(
      engine_, worker_));  // never seen: its first record reports it
  Line(Level::kInfo, "Avg prompt throughput: 0.0 tokens/s", kT0);
  EXPECT_TRUE(RuleEngine::FastPath::AbsorbQuietRecord(engine_, worker_));
  Line(Level::kError, "Worker failed with error 'Unknown SF transformation'", kT0);
  EXPECT_FALSE(RuleEngine::FastPath::AbsorbQuietRecord(
      engine_, worker_));  // a symptom waits for its traceback
  Traceback(kWeightPrep, kSymptom, kT0);
  EXPECT_TRUE(RuleEngine::FastPath::AbsorbQuietRecord(engine_, worker_));
  worker_.rank = 3;  // learnt by the parser: the next record reports the rank
  EXPECT_FALSE(RuleEngine::FastPath::AbsorbQuietRecord(engine_, worker_));
  Line(Level::kInfo, "Avg prompt throughput: 0.0 tokens/s", kT0);
  EXPECT_TRUE(RuleEngine::FastPath::AbsorbQuietRecord(engine_, worker_));
}

TEST_F(RuleEngineTest, ExpiredStagesAreForgottenAndNoLongerNeeded) {
  Line(Level::kInfo, "Loading weights took 12.3 seconds", kT0);
  SourcePosition pos{1000, 10};
  engine_.LowestNeeded(&pos);
  EXPECT_EQ(pos.line, 10u);  // a restart need not read the stage again: SaveState keeps it
  EXPECT_THAT(engine_.SaveState(pos.line), HasSubstr("Loading weights took 12.3 seconds"));
  // Within maxspan plus a day of clock skew it is kept: a symptom dated
  // behind the floor may still use it.
  engine_.ForgetExpiredStages(kT0 + 20 * 3600 * kSecond);
  EXPECT_EQ(events_.Evictions(Evicted::kStageMatch), 0u);
  Traceback(kWeightPrep, kSymptom, kT0 + 5 * 60 * kSecond);
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kConfirmed);
}

TEST_F(RuleEngineTest, AStageOlderThanMaxspanAndADayIsDropped) {
  Line(Level::kInfo, "Loading weights took 12.3 seconds", kT0);
  engine_.ForgetExpiredStages(kT0 + 25 * 3600 * kSecond);
  EXPECT_EQ(events_.Evictions(Evicted::kStageMatch), 1u);  // evictions_total{what="stage_match"}
  // The same symptom time as above: without the stage it is partial.
  Traceback(kWeightPrep, kSymptom, kT0 + 5 * 60 * kSecond);
  engine_.Finish();
  ASSERT_EQ(hits_.hits.size(), 1u);
  EXPECT_EQ(hits_.hits[0].confidence, Confidence::kPartial);
  SourcePosition pos{1000, 10};
  engine_.LowestNeeded(&pos);
  // The exception line (4) is carried (a wrap may go on); the stage (line 1)
  // is kept by SaveState, not read again.
  EXPECT_EQ(pos.line, 3u);
}

// Ticks skip the stage matches until the earliest can expire; a match dated
// behind the others (another stream's clock, a late line) moves that moment
// earlier, so it is still dropped when its own day is up.
TEST_F(RuleEngineTest, AStageDatedBehindTheOthersIsDroppedOnItsOwnTime) {
  Line(Level::kInfo, "Loading weights took 12.3 seconds", kT0 + 10 * 3600 * kSecond);
  engine_.ForgetExpiredStages(kT0 + 11 * 3600 * kSecond);  // nothing due: the earliest is noted
  EXPECT_EQ(events_.Evictions(Evicted::kStageMatch), 0u);
  WorkerInfo other = worker_;
  other.id = worker_.id + 1;
  other.rank = 1;
  Line(Level::kInfo, "Loading weights took 9.8 seconds", kT0, LineKind::kMessage, &other);
  engine_.ForgetExpiredStages(kT0 + 25 * 3600 * kSecond);
  EXPECT_EQ(events_.Evictions(Evicted::kStageMatch), 1u);  // the late one; the first is kept
  engine_.ForgetExpiredStages(kT0 + 35 * 3600 * kSecond);
  EXPECT_EQ(events_.Evictions(Evicted::kStageMatch), 2u);
}

}  // namespace
}  // namespace fingerprintd::rules
