// SourceParser end to end: worker identity, rank learning, bad input, and a
// Ray TP=2 failure shaped like the reference logs (our own fixture).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fingerprintd/parse.h"
#include "testing/collecting_sink.h"
#include "testing/counting_events.h"

namespace fingerprintd::parse {
namespace {

using ::fingerprintd::testing::CollectingSink;
using ::fingerprintd::testing::CountingEvents;

class SourceParserTest : public ::testing::Test {
 protected:
  void Parse(const std::vector<std::string>& lines, ParserOptions options = {}) {
    options.current_year = 2026;
    parser_ = std::make_unique<SourceParser>(9, "src.log", options, events_, sink_);
    for (const std::string& line : lines) parser_->Feed(line);
    parser_->Finish();
  }

  CountingEvents events_;
  CollectingSink sink_;
  std::unique_ptr<SourceParser> parser_;
};

TEST_F(SourceParserTest, EmptyInputProducesNothing) {
  Parse({});
  EXPECT_TRUE(sink_.records.empty());
  EXPECT_TRUE(sink_.tracebacks.empty());
  EXPECT_EQ(events_.lines_read, 0u);
  EXPECT_EQ(parser_->envelope(), Envelope::kAuto);
  EXPECT_EQ(parser_->source_name(), "src.log");
}

TEST_F(SourceParserTest, EveryPhysicalLineIsCountedWithItsOffset) {
  Parse({"first", "", "third line"});
  ASSERT_EQ(sink_.records.size(), 3u);
  EXPECT_EQ(events_.lines_read, 3u);
  EXPECT_EQ(events_.bytes_read, 6u + 1u + 11u);
  EXPECT_EQ(events_.last_source, "src.log");
  EXPECT_EQ(sink_.records[1].message, "");
  EXPECT_EQ(sink_.records[2].offset, 7u);
  EXPECT_EQ(sink_.records[2].line_number, 3u);
  EXPECT_EQ(sink_.records[2].source_id, 9u);
}

TEST_F(SourceParserTest, UnterminatedLastLineFedAsAFinalLineIsParsed) {
  Parse({"INFO 04-25 06:11:27 [a.py:1] done", "RuntimeError: cut off mid-wri"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  EXPECT_EQ(sink_.tracebacks[0].blocks[0].message, "cut off mid-wri");
}

TEST_F(SourceParserTest, BinaryBytesAreKeptAndCountedOncePerLine) {
  Parse({std::string("bin\0\x01\x02ary", 9), "clean"});
  ASSERT_EQ(sink_.records.size(), 2u);
  EXPECT_EQ(sink_.records[0].message.size(), 9u);
  EXPECT_EQ(events_.Dropped(DropReason::kBinary), 1u);
}

TEST_F(SourceParserTest, InvalidUtf8IsReplacedInTheMessageAndKeptInRaw) {
  Parse({"bad \xff\xfe byte and good \xC3\xA9 and cut \xE2\x82"});
  ASSERT_EQ(sink_.records.size(), 1u);
  EXPECT_EQ(sink_.records[0].message,
            "bad \xEF\xBF\xBD\xEF\xBF\xBD byte and good \xC3\xA9 and cut \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(sink_.records[0].raw, "bad \xff\xfe byte and good \xC3\xA9 and cut \xE2\x82");
  EXPECT_EQ(events_.Dropped(DropReason::kInvalidUtf8), 1u);
}

TEST_F(SourceParserTest, FiveMegabyteLineIsTruncatedAtTheCapAndCounted) {
  ParserOptions options;
  options.max_line_bytes = 1 << 20;
  std::string huge =
      "(Worker_TP0 pid=1) ERROR 04-25 06:11:27 [a.py:1] " + std::string(5 << 20, 'x');
  Parse({huge, "after"}, options);
  ASSERT_EQ(sink_.records.size(), 2u);
  EXPECT_EQ(sink_.records[0].raw.size(), size_t{1} << 20);
  EXPECT_EQ(sink_.records[0].worker->name, "Worker_TP0");
  EXPECT_EQ(events_.Dropped(DropReason::kLineTooLong), 1u);
  EXPECT_EQ(sink_.records[1].message, "after");
}

TEST_F(SourceParserTest, TruncationNeverSplitsAUtf8Sequence) {
  ParserOptions options;
  options.max_line_bytes = 5;
  Parse({"abcd\xC3\xA9z"}, options);
  EXPECT_EQ(sink_.records[0].message, "abcd");
  EXPECT_EQ(events_.Dropped(DropReason::kInvalidUtf8), 0u);
}

TEST_F(SourceParserTest, EachDistinctProcessIsInternedOnceWithStableIdentity) {
  Parse({"(Worker_TP0 pid=10) INFO 04-25 06:11:27 [a.py:1] a",
         "(Worker_TP1 pid=11) INFO 04-25 06:11:27 [a.py:1] b",
         "(EngineCore pid=1) (Worker_TP0 pid=10) INFO 04-25 06:11:27 [a.py:1] c",
         "plain unprefixed",
         "(RayWorkerWrapper pid=10, ip=10.0.0.2) INFO 04-25 06:11:27 [a.py:1] d"});
  ASSERT_EQ(sink_.records.size(), 5u);
  EXPECT_EQ(sink_.records[0].worker, sink_.records[2].worker);
  EXPECT_NE(sink_.records[0].worker, sink_.records[1].worker);
  EXPECT_EQ(sink_.records[3].worker->Label(), "(unprefixed)");
  EXPECT_EQ(sink_.records[3].worker->role, ProcessRole::kUnknown);
  EXPECT_EQ(sink_.records[4].worker->Label(), "RayWorkerWrapper pid=10 ip=10.0.0.2");
  const WorkerTable& table = parser_->workers();
  EXPECT_EQ(table.size(), 4u);  // unprefixed, TP0, TP1, Ray
  for (size_t i = 0; i < table.size(); ++i) EXPECT_EQ(table.Get(i).id, i);
}

TEST_F(SourceParserTest, PastTheStreamCapTheLongestSilentProcessIsForgottenAndItsSlotReused) {
  ParserOptions options;
  options.max_workers = 2;  // processes; the unprefixed stream does not count
  Parse({"(Worker_TP0 pid=10) INFO 04-25 06:11:20 [a.py:1] a",
         "(Worker_TP1 pid=11) INFO 04-25 06:11:27 [a.py:1] b",
         "(Worker_TP2 pid=12) INFO 04-25 06:11:28 [a.py:1] c",
         "(Worker_TP1 pid=11) INFO 04-25 06:11:29 [a.py:1] d"},
        options);
  ASSERT_EQ(sink_.records.size(), 4u);
  // TP0 was silent the longest: its slot now holds TP2; TP1 is untouched.
  EXPECT_EQ(sink_.records[2].worker, sink_.records[0].worker);
  EXPECT_EQ(sink_.records[2].message, "c");
  EXPECT_EQ(sink_.records[2].worker->Label(), "Worker_TP2 pid=12");
  EXPECT_EQ(sink_.records[3].worker, sink_.records[1].worker);
  EXPECT_EQ(sink_.records[3].worker->Label(), "Worker_TP1 pid=11");
  EXPECT_EQ(parser_->workers().size(), 3u);  // unprefixed, two processes
  EXPECT_EQ(events_.Evictions(Evicted::kProcessStream), 1u);
  uint64_t dropped = 0;
  for (uint64_t d : events_.dropped) dropped += d;
  EXPECT_EQ(dropped, 0u);  // forgetting a stream loses no line
}

TEST_F(SourceParserTest, RayWorkerLearnsItsRankFromTheWorldSizeLine) {
  const std::string ray1 =
      "(EngineCore pid=1273) \x1b[36m(RayWorkerWrapper pid=340, ip=10.10.10.2)\x1b[0m ";
  Parse({ray1 + "WARNING 04-25 06:11:51 [system_utils.py:38] Overwriting environment variable",
         ray1 + "INFO 04-25 06:11:53 [parallel_state.py:1400] world_size=2 rank=1 local_rank=0 "
                "distributed_init_method=tcp://10.10.10.1:52205 backend=nccl",
         ray1 + "spark02:340:340 [0] NCCL INFO cudaDriverVersion 13020"});
  ASSERT_EQ(sink_.records.size(), 3u);
  const WorkerInfo* w = sink_.records[2].worker;
  EXPECT_EQ(w->name, "RayWorkerWrapper");
  EXPECT_EQ(w->pid, 340);
  EXPECT_EQ(w->ip, "10.10.10.2");
  EXPECT_EQ(w->rank, 1);
  EXPECT_EQ(w->GlobalRank(2), 1);
  EXPECT_EQ(sink_.records[2].level, Level::kInfo);
  EXPECT_EQ(sink_.records[2].message, "cudaDriverVersion 13020");
}

TEST_F(SourceParserTest, RankAssignmentLineSetsRankAndTpIndex) {
  Parse(
      {"(RayWorkerWrapper pid=3115) INFO 04-25 05:14:10 [parallel_state.py:1713] rank 1 in world "
       "size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 1, EP rank 0"});
  const WorkerInfo* w = sink_.records[0].worker;
  EXPECT_EQ(w->rank, 1);
  EXPECT_EQ(w->tp, 1);
  EXPECT_EQ(w->pp, 0);
}

TEST_F(SourceParserTest, TensorRtAndSglangAndTorchRanksBecomeWorkers) {
  Parse(
      {"[01/16/2026-06:20:17] [TRT-LLM] [RANK 1] [E] failure",
       "[2025-11-03 18:48:34 DP0 TP1] Load weight begin.",
       "[rank3]:[E730 15:32:17.841 ProcessGroupNCCL.cpp:1479] Watchdog caught collective timeout"});
  ASSERT_EQ(sink_.records.size(), 3u);
  EXPECT_EQ(sink_.records[0].worker->rank, 1);
  EXPECT_EQ(sink_.records[0].worker->role, ProcessRole::kWorker);
  EXPECT_EQ(sink_.records[1].worker->tp, 1);
  EXPECT_EQ(sink_.records[2].worker->rank, 3);
  EXPECT_EQ(sink_.records[2].level, Level::kError);
  EXPECT_EQ(sink_.records[2].location, "ProcessGroupNCCL.cpp:1479");
}

// A Ray TP=2 deployment whose weight post-processing fails in DeepGEMM, shaped
// like the reference capture: the file starts mid-traceback (no header), every
// line carries the EngineCore prefix, and the remote worker's traceback
// follows the RayTaskError line.
std::vector<std::string> RayUnknownSfFixture() {
  const std::string e = "(EngineCore pid=4410) ";
  const std::string pkg = "/usr/local/lib/python3.12/dist-packages/";
  auto frame = [&](const std::string& path, int line, const std::string& fn) {
    return e + "  File \"" + pkg + path + "\", line " + std::to_string(line) + ", in " + fn;
  };
  return {
      frame("ray/_private/client_mode_hook.py", 103, "wrapper"),
      e + "    return func(*args, **kwargs)",
      e + "           ^^^^^^^^^^^^^^^^^^^^^",
      frame("ray/_private/worker.py", 2961, "get"),
      e + "    values, debugger_breakpoint = worker.get_objects(",
      frame("ray/_private/worker.py", 1011, "get_objects"),
      e + "    raise value.as_instanceof_cause()",
      e + "ray.exceptions.RayTaskError(RuntimeError): "
          "\x1b[36mray::RayWorkerWrapper.execute_method()"
          "\x1b[39m (pid=5120, ip=192.168.7.11, actor_id=00ff, repr=<RayWorkerWrapper object>)",
      e + "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
      frame("vllm/v1/executor/ray_utils.py", 90, "execute_method"),
      e + "    raise e",
      frame("vllm/v1/worker/gpu_worker.py", 301, "load_model"),
      e + "    self.model_runner.load_model(eep_scale_up=eep_scale_up)",
      frame("vllm/model_executor/model_loader/utils.py", 110, "process_weights_after_loading"),
      e + "    quant_method.process_weights_after_loading(module)",
      frame("vllm/model_executor/layers/quantization/fp8.py", 399, "process_weights_after_loading"),
      e + "    self.fp8_linear.process_weights_after_loading(layer)",
      frame("vllm/model_executor/kernels/linear/scaled_mm/deep_gemm.py", 95,
            "process_weights_after_loading"),
      e + "    w, ws = deepgemm_post_process_fp8_weight_block(",
      e + "            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
      frame("vllm/model_executor/layers/quantization/utils/fp8_utils.py", 1033,
            "deepgemm_post_process_fp8_weight_block"),
      e + "    ws = transform_sf_into_required_layout(",
      frame("vllm/utils/deep_gemm.py", 331, "transform_sf_into_required_layout"),
      e + "    return _transform_sf_into_required_layout_impl(",
      e + "RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
          "Unknown SF transformation",
      e + "INFO 03-02 11:20:41 [ray_executor.py:120] Shutting down Ray distributed executor.",
  };
}

TEST_F(SourceParserTest, RayUnknownSfFixtureYieldsTheRootCauseWithItsFramesInOrder) {
  Parse(RayUnknownSfFixture());
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_TRUE(tb.complete);
  EXPECT_EQ(tb.worker->role, ProcessRole::kEngineCore);
  EXPECT_EQ(tb.first_line, 1u);
  ASSERT_EQ(tb.blocks.size(), 2u);
  EXPECT_FALSE(tb.blocks[0].has_header);
  EXPECT_EQ(tb.blocks[0].type, "ray.exceptions.RayTaskError(RuntimeError)");

  const ExceptionBlock* root = tb.RootCause();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->type, "RuntimeError");
  EXPECT_NE(root->message.find("Unknown SF transformation"), std::string::npos);
  ASSERT_GE(root->frames.size(), 4u);
  const size_t n = root->frames.size();
  auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  EXPECT_TRUE(ends_with(root->frames[n - 4].file, "quantization/fp8.py"));
  EXPECT_EQ(root->frames[n - 4].function, "process_weights_after_loading");
  EXPECT_TRUE(ends_with(root->frames[n - 3].file, "scaled_mm/deep_gemm.py"));
  EXPECT_EQ(root->frames[n - 3].function, "process_weights_after_loading");
  EXPECT_TRUE(ends_with(root->frames[n - 2].file, "utils/fp8_utils.py"));
  EXPECT_EQ(root->frames[n - 2].function, "deepgemm_post_process_fp8_weight_block");
  EXPECT_TRUE(ends_with(root->frames[n - 1].file, "vllm/utils/deep_gemm.py"));
  EXPECT_EQ(root->frames[n - 1].function, "transform_sf_into_required_layout");
  EXPECT_EQ(root->frames[n - 1].code, "return _transform_sf_into_required_layout_impl(");

  // Records: every traceback line is an error of the EngineCore stream; the
  // closing INFO line is an ordinary message and carries the first time.
  for (size_t i = 0; i + 1 < sink_.records.size(); ++i) {
    EXPECT_EQ(sink_.records[i].level, Level::kError) << i;
    EXPECT_EQ(sink_.records[i].worker, tb.worker);
  }
  EXPECT_EQ(sink_.records.back().kind, LineKind::kMessage);
  EXPECT_EQ(sink_.records.back().level, Level::kInfo);
  EXPECT_EQ(events_.Guessed(TimeFallback::kNoTimestamp), sink_.records.size() - 1);
  EXPECT_EQ(events_.tracebacks, 1u);
}

}  // namespace
}  // namespace fingerprintd::parse
