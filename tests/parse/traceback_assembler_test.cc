// Traceback assembly per worker stream, through SourceParser as users see it.
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

class TracebackAssemblerTest : public ::testing::Test {
 protected:
  void Start(ParserOptions options = {}) {
    options.current_year = 2026;
    parser_ = std::make_unique<SourceParser>(5, "tb.log", options, events_, sink_);
  }
  void Feed(const std::vector<std::string>& lines) {
    if (!parser_) Start();
    for (const std::string& line : lines) parser_->Feed(line);
  }
  void FeedAll(const std::vector<std::string>& lines) {
    Feed(lines);
    parser_->Finish();
  }
  std::vector<std::string> Functions(const ExceptionBlock& block) const {
    std::vector<std::string> out;
    for (const Frame& f : block.frames) out.push_back(f.function);
    return out;
  }
  std::vector<LineKind> Kinds() const {
    std::vector<LineKind> out;
    for (const auto& r : sink_.records) out.push_back(r.kind);
    return out;
  }

  CountingEvents events_;
  CollectingSink sink_;
  std::unique_ptr<SourceParser> parser_;
};

TEST_F(TracebackAssemblerTest, RawTracebackIsAssembledAndEmittedAtTheExceptionLine) {
  Feed({"Traceback (most recent call last):", "  File \"/app/main.py\", line 10, in <module>",
        "    main()", "  File \"/app/main.py\", line 5, in main", "    raise ValueError(\"bad\")",
        "ValueError: bad"});
  EXPECT_TRUE(sink_.tracebacks.empty());  // pending: a chain may still follow
  Feed({"next unrelated line"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_TRUE(tb.complete);
  EXPECT_FALSE(tb.truncated);
  ASSERT_EQ(tb.blocks.size(), 1u);
  EXPECT_TRUE(tb.blocks[0].has_header);
  EXPECT_EQ(tb.blocks[0].type, "ValueError");
  EXPECT_EQ(tb.blocks[0].message, "bad");
  EXPECT_EQ(Functions(tb.blocks[0]), (std::vector<std::string>{"<module>", "main"}));
  EXPECT_EQ(tb.blocks[0].frames[0].code, "main()");
  EXPECT_EQ(tb.blocks[0].frames[0].line, 10);
  EXPECT_EQ(tb.first_line, 1u);
  EXPECT_EQ(tb.last_line, 6u);
  EXPECT_EQ(Kinds(), (std::vector<LineKind>{LineKind::kTracebackHeader, LineKind::kFrame,
                                            LineKind::kCode, LineKind::kFrame, LineKind::kCode,
                                            LineKind::kException, LineKind::kMessage}));
  // Headerless traceback lines are errors; the unrelated line keeps no level.
  EXPECT_EQ(sink_.records[1].level, Level::kError);
  EXPECT_EQ(sink_.records[6].level, Level::kUnknown);
  // Every line of the traceback was delivered before the traceback itself.
  EXPECT_EQ(sink_.records_before_traceback[5], 0u);
  EXPECT_EQ(sink_.records_before_traceback[6], 1u);
  EXPECT_EQ(events_.tracebacks, 1u);
}

TEST_F(TracebackAssemblerTest, TerminateWithWhatAndFrameDumpIsOneCppFailureRecord) {
  FeedAll(
      {"terminate called after throwing an instance of 'c10::DistBackendError'",
       "  what():  [PG ID 0 PG GUID 0 Rank 1] Process group watchdog thread terminated with "
       "exception: [Rank 1] Watchdog caught collective operation timeout",
       "Exception raised from checkTimeout at "
       "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:686 (most recent call first):",
       "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f3a1c0 in "
       "/venv/torch/lib/libc10.so)",
       "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout() + 0x23d (0x7f39d1e in "
       "/venv/torch/lib/libtorch_cuda.so)",
       "frame #2: <unknown function> + 0xdc253 (0x7f3a53c in /lib/libstdc++.so.6)",
       "INFO 02-10 08:00:05 [launcher.py:80] next record"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_TRUE(tb.complete);
  ASSERT_EQ(tb.blocks.size(), 1u);
  const ExceptionBlock& block = tb.blocks[0];
  EXPECT_EQ(block.type, "c10::DistBackendError");
  EXPECT_EQ(block.message,
            "[PG ID 0 PG GUID 0 Rank 1] Process group watchdog thread terminated with exception: "
            "[Rank 1] Watchdog caught collective operation timeout");
  // Outermost first, as Python's: the backtrace printed innermost first is
  // reversed, and the place the exception was raised from comes last.
  EXPECT_EQ(Functions(block),
            (std::vector<std::string>{
                "<unknown function>", "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout()",
                "c10::Error::Error(c10::SourceLocation, std::string)", "checkTimeout"}));
  EXPECT_EQ(block.frames[1].file, "/venv/torch/lib/libtorch_cuda.so");
  EXPECT_EQ(block.frames[3].file, "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp");
  EXPECT_EQ(block.frames[3].line, 686);
  EXPECT_EQ(tb.last_line, 6u);
  EXPECT_EQ(Kinds(), (std::vector<LineKind>{LineKind::kException, LineKind::kException,
                                            LineKind::kFrame, LineKind::kFrame, LineKind::kFrame,
                                            LineKind::kFrame, LineKind::kMessage}));
  EXPECT_GE(sink_.records[0].level, Level::kError);
}

TEST_F(TracebackAssemblerTest, TensorRtLlmNumberedBacktraceGivesTheRecordItsFrames) {
  FeedAll(
      {"terminate called after throwing an instance of "
       "'tensorrt_llm::common::TllmException'",
       "  what():  [TensorRT-LLM][ERROR] Assertion failed: no valid tactic (/src/gemm.cpp:77)",
       "1       0x7f11c0a1b2c3 tensorrt_llm::common::throwRuntimeError(char const*, int) + 90",
       "2       0x7f11c0b2c3d4 tensorrt_llm::kernels::GemmRunner::run() + 4410",
       "3       0x7f11c0ce283f /usr/local/tensorrt/lib/libnvinfer.so.10(+0x17eb620) [0x7f11c0]"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const ExceptionBlock& block = sink_.tracebacks[0].blocks[0];
  EXPECT_EQ(block.type, "tensorrt_llm::common::TllmException");
  EXPECT_EQ(block.message, "Assertion failed: no valid tactic (/src/gemm.cpp:77)");
  EXPECT_EQ(Functions(block), (std::vector<std::string>{
                                  "<unknown function>", "tensorrt_llm::kernels::GemmRunner::run()",
                                  "tensorrt_llm::common::throwRuntimeError(char const*, int)"}));
  EXPECT_EQ(block.frames[0].file, "/usr/local/tensorrt/lib/libnvinfer.so.10");
}

TEST_F(TracebackAssemblerTest, CTenOriginAfterAPythonExceptionStaysInItsTracebackWithoutFrames) {
  FeedAll({"Traceback (most recent call last):", "  File \"/app/run.py\", line 3, in step",
           "RuntimeError: CUDA error: an illegal memory access was encountered",
           "Exception raised from c10_cuda_check_implementation at "
           "/pytorch/c10/cuda/CUDAException.cpp:43 (most recent call first):",
           "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f in "
           "/venv/torch/lib/libc10.so)",
           "a line of its own"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_EQ(tb.last_line, 5u);
  EXPECT_EQ(Functions(tb.blocks[0]), (std::vector<std::string>{"step"}));
  EXPECT_EQ(tb.blocks[0].message, "CUDA error: an illegal memory access was encountered");
  EXPECT_EQ(sink_.records[3].kind, LineKind::kCode);
  EXPECT_EQ(sink_.records[5].kind, LineKind::kMessage);
}

TEST_F(TracebackAssemblerTest, FinishEmitsAPendingTracebackAsComplete) {
  FeedAll({"Traceback (most recent call last):", "  File \"a.py\", line 1, in f", "KeyError: 'x'"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  EXPECT_TRUE(sink_.tracebacks[0].complete);
  EXPECT_EQ(sink_.tracebacks[0].blocks[0].message, "'x'");
}

TEST_F(TracebackAssemblerTest, ChainedExceptionsStayInOneTracebackInnermostFirst) {
  FeedAll({"Traceback (most recent call last):", "  File \"a.py\", line 1, in inner",
           "KeyError: 'float8_e8m0fnu'", "",
           "The above exception was the direct cause of the following exception:", "",
           "Traceback (most recent call last):", "  File \"b.py\", line 2, in outer",
           "RuntimeError: wrapped", "",
           "During handling of the above exception, another exception occurred:", "",
           "Traceback (most recent call last):", "  File \"c.py\", line 3, in handler",
           "SystemExit: 1"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  ASSERT_EQ(tb.blocks.size(), 3u);
  EXPECT_EQ(tb.blocks[0].type, "KeyError");
  EXPECT_EQ(tb.blocks[1].type, "RuntimeError");
  EXPECT_EQ(tb.blocks[2].type, "SystemExit");
  EXPECT_TRUE(tb.blocks[2].has_header);
  EXPECT_EQ(tb.RootCause()->type, "KeyError");
  EXPECT_EQ(tb.FrameCount(), 3u);
  EXPECT_EQ(sink_.records[4].kind, LineKind::kChainSeparator);
  EXPECT_EQ(sink_.records[3].kind, LineKind::kChainSeparator);
}

TEST_F(TracebackAssemblerTest, HeaderedLoggerExceptionBodyIsOneRecordWithItsLevel) {
  const std::string h = "(Worker_TP1 pid=8761) ERROR 12-23 19:34:21 [multiproc_executor.py:824] ";
  FeedAll(
      {h + "WorkerProc failed to start.", h + "Traceback (most recent call last):",
       h + "  File \"/v/multiproc_executor.py\", line 722, in worker_main",
       h + "    worker = WorkerProc(*args, **kwargs)",
       h + "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^", h + "    raise RuntimeError(",
       h + "    ...<2 lines>...",
       h + "RuntimeError: DeepGEMM backend is not available or outdated.", h,
       "(EngineCore_DP0 pid=8626) ERROR 12-23 19:34:21 [core.py:866] EngineCore failed to start."});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_EQ(tb.worker->name, "Worker_TP1");
  EXPECT_TRUE(tb.complete);
  ASSERT_EQ(tb.blocks.size(), 1u);
  EXPECT_EQ(tb.blocks[0].frames.size(), 1u);
  EXPECT_EQ(tb.blocks[0].frames[0].code, "worker = WorkerProc(*args, **kwargs)");
  EXPECT_EQ(tb.blocks[0].message, "DeepGEMM backend is not available or outdated.");
  EXPECT_EQ(sink_.records[4].kind, LineKind::kCode);  // caret line
  EXPECT_EQ(sink_.records[6].kind, LineKind::kCode);  // ...<2 lines>...
  EXPECT_EQ(sink_.records[7].kind, LineKind::kException);
  EXPECT_EQ(sink_.records[7].location, "multiproc_executor.py:824");
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(sink_.records[i].level, Level::kError) << i;
  EXPECT_EQ(sink_.records[9].kind, LineKind::kMessage);
}

TEST_F(TracebackAssemblerTest, ForeignHeaderedLineFlushesAnOpenTracebackAsIncomplete) {
  const std::string h = "ERROR 12-23 19:34:21 [core.py:1] ";
  Feed({h + "Traceback (most recent call last):", h + "  File \"a.py\", line 1, in f",
        "INFO 12-23 19:34:22 [other.py:9] unrelated"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  EXPECT_FALSE(sink_.tracebacks[0].complete);
  EXPECT_EQ(sink_.tracebacks[0].FrameCount(), 1u);
  EXPECT_EQ(sink_.records_before_traceback[2], 1u);  // flushed before the foreign record
}

TEST_F(TracebackAssemblerTest, StderrPrintInsideAHeaderedTracebackNeitherJoinsNorEndsIt) {
  const std::string h = "(EngineCore pid=9) ERROR 04-25 05:14:10 [core.py:1110] ";
  FeedAll({h + "Traceback (most recent call last):", h + "  File \"a.py\", line 1, in f",
           "(EngineCore pid=9) Process EngineCore:", h + "  File \"b.py\", line 2, in g",
           h + "ValueError: x"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  EXPECT_TRUE(sink_.tracebacks[0].complete);
  EXPECT_EQ(sink_.tracebacks[0].FrameCount(), 2u);
  EXPECT_EQ(sink_.records[2].kind, LineKind::kMessage);
}

TEST_F(TracebackAssemblerTest, InterleavedRanksKeepTheirTracebacksApart) {
  auto w = [](int tp, const std::string& body) {
    return "(Worker_TP" + std::to_string(tp) + " pid=" + std::to_string(100 + tp) +
           ") ERROR 01-04 14:48:25 [multiproc_executor.py:751] " + body;
  };
  std::vector<std::string> lines;
  for (int tp = 0; tp < 2; ++tp) lines.push_back(w(tp, "Traceback (most recent call last):"));
  for (int i = 0; i < 3; ++i) {
    for (int tp = 0; tp < 2; ++tp) {
      lines.push_back(w(tp, "  File \"f" + std::to_string(i) + ".py\", line " +
                                std::to_string(10 * tp + i) + ", in fn" + std::to_string(i)));
      lines.push_back(w(tp, "    code" + std::to_string(i)));
    }
  }
  lines.push_back(w(1, "RuntimeError: rank one"));
  lines.push_back(w(0, "RuntimeError: rank zero"));
  FeedAll(lines);
  ASSERT_EQ(sink_.tracebacks.size(), 2u);
  for (const Traceback& tb : sink_.tracebacks) {
    ASSERT_EQ(tb.blocks.size(), 1u);
    const int tp = tb.worker->tp;
    EXPECT_EQ(tb.blocks[0].message, tp == 0 ? "rank zero" : "rank one");
    EXPECT_EQ(Functions(tb.blocks[0]), (std::vector<std::string>{"fn0", "fn1", "fn2"}));
    EXPECT_EQ(tb.blocks[0].frames[2].line, 10 * tp + 2);
    EXPECT_EQ(tb.blocks[0].frames[1].code, "code1");
  }
  EXPECT_NE(sink_.tracebacks[0].worker, sink_.tracebacks[1].worker);
}

TEST_F(TracebackAssemblerTest, RayWrapperKeepsTheRemoteTracebackInTheSameTraceback) {
  const std::string e = "(EngineCore pid=1223) ";
  FeedAll(
      {e + "Traceback (most recent call last):",
       e + "  File \"/r/worker.py\", line 1023, in get_objects",
       e + "    raise value.as_instanceof_cause()",
       e + "ray.exceptions.RayTaskError(RuntimeError): "
           "\x1b[36mray::RayWorkerWrapper.execute_method()"
           "\x1b[39m (pid=2346, ip=10.10.10.1)",
       e + "           ^^^^^^^^^^^^^^^^",
       e + "  File \"/v/ray_utils.py\", line 88, in execute_method", e + "    raise e",
       e + "  File \"/v/deep_gemm.py\", line 338, in transform_sf_into_required_layout",
       e + "RuntimeError: Unknown SF transformation",
       e + "INFO 04-25 06:08:14 [ray_executor.py:109] Shutting down Ray distributed executor."});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_TRUE(tb.complete);
  ASSERT_EQ(tb.blocks.size(), 2u);
  EXPECT_EQ(tb.blocks[0].type, "ray.exceptions.RayTaskError(RuntimeError)");
  EXPECT_EQ(tb.blocks[0].message.substr(0, 35), "ray::RayWorkerWrapper.execute_metho");
  EXPECT_FALSE(tb.blocks[1].has_header);
  EXPECT_EQ(Functions(tb.blocks[1]),
            (std::vector<std::string>{"execute_method", "transform_sf_into_required_layout"}));
  ASSERT_NE(tb.RootCause(), nullptr);
  EXPECT_EQ(tb.RootCause()->type, "RuntimeError");
  EXPECT_EQ(tb.RootCause()->message, "Unknown SF transformation");
}

TEST_F(TracebackAssemblerTest, Python313CaretsAndElisionAreCodeNotFrameSource) {
  FeedAll({"Traceback (most recent call last):", "  File \"p.py\", line 314, in _bootstrap",
           "    ~~~~~~~~^^", "    self.run()", "  File \"q.py\", line 2, in run",
           "  [Previous line repeated 996 more times]", "RecursionError: too deep"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const auto& frames = sink_.tracebacks[0].blocks[0].frames;
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].code, "self.run()");
  EXPECT_EQ(frames[1].code, "");
  EXPECT_EQ(sink_.records[5].kind, LineKind::kCode);
}

TEST_F(TracebackAssemblerTest, HeaderlessBodyStartingAtAFrameOpensABlockWithoutHeader) {
  FeedAll({"(APIServer pid=1)   File \"uvloop/loop.pyx\", line 1518, in uvloop.loop.Loop.run",
           "(APIServer pid=1)   File \"C:\\vllm\\entrypoints\\api.py\", line 9, in run_server",
           "(APIServer pid=1)   File \"<frozen runpy>\", line 88, in _run_code",
           "(APIServer pid=1) RuntimeError: Engine core initialization failed."});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_FALSE(tb.blocks[0].has_header);
  ASSERT_EQ(tb.blocks[0].frames.size(), 3u);
  EXPECT_EQ(tb.blocks[0].frames[1].file, "C:\\vllm\\entrypoints\\api.py");
  EXPECT_EQ(tb.blocks[0].frames[2].file, "<frozen runpy>");
  EXPECT_EQ(tb.worker->role, ProcessRole::kApiServer);
}

TEST_F(TracebackAssemblerTest, OneLinePasteYieldsACompleteTracebackWithoutFrames) {
  FeedAll(
      {"RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
       "Unknown SF transformation"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_TRUE(tb.complete);
  ASSERT_EQ(tb.blocks.size(), 1u);
  EXPECT_EQ(tb.FrameCount(), 0u);
  EXPECT_EQ(tb.blocks[0].type, "RuntimeError");
  EXPECT_EQ(sink_.records[0].kind, LineKind::kException);
  EXPECT_EQ(sink_.records[0].level, Level::kError);
}

TEST_F(TracebackAssemblerTest, OneLinePasteAfterAHeaderOrPrefixIsRecognised) {
  FeedAll({"INFO 04-25 06:08:14 [x.py:1] torch.OutOfMemoryError: CUDA out of memory.",
           "(EngineCore pid=3) tvm.error.InternalError: oops"});
  ASSERT_EQ(sink_.tracebacks.size(), 2u);
  EXPECT_EQ(sink_.tracebacks[0].blocks[0].type, "torch.OutOfMemoryError");
  EXPECT_EQ(sink_.records[0].level, Level::kError);  // raised from INFO
  EXPECT_EQ(sink_.tracebacks[1].blocks[0].type, "tvm.error.InternalError");
}

TEST_F(TracebackAssemblerTest, ProseWithAColonIsNotAnException) {
  FeedAll({"INFO:     Started server process [1]", "Note: this is fine", "Error: not a class",
           "Loading weights took 3.2 seconds",
           "(APIServer pid=1) INFO 04-25 06:11:27 [a.py:1] "
           "Resolved architecture: DeepseekV4ForCausalLM",
           "/usr/lib/python3.12/warnings.py:1: UserWarning: a warning is not a traceback"});
  EXPECT_TRUE(sink_.tracebacks.empty());
  for (const auto& r : sink_.records) EXPECT_EQ(r.kind, LineKind::kMessage) << r.message;
  EXPECT_EQ(sink_.records.back().level, Level::kWarning);
}

TEST_F(TracebackAssemblerTest, WrappedExceptionMessageIsAppendedUpToThreeLines) {
  FeedAll({"Traceback (most recent call last):", "  File \"a.py\", line 1, in f",
           "RuntimeError: cutlass_gemm_caller,", "/workspace/csrc/cutlass_gemm_caller.cuh:61,",
           "Error Internal", "  warnings.warn("});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  EXPECT_EQ(sink_.tracebacks[0].blocks[0].message,
            "cutlass_gemm_caller,\n/workspace/csrc/cutlass_gemm_caller.cuh:61,\nError Internal");
  EXPECT_EQ(sink_.records[3].kind, LineKind::kException);
  EXPECT_EQ(sink_.records[5].kind, LineKind::kMessage);
}

TEST_F(TracebackAssemblerTest, TickFlushesIdleOpenTracebacksAndPendingOnes) {
  ParserOptions options;
  options.traceback_timeout_us = 5'000'000;
  Start(options);
  Feed({"2026-04-25 06:00:00,000\tERROR a.py:1 -- start",
        "(Worker_TP0 pid=1) Traceback (most recent call last):",
        "(Worker_TP0 pid=1)   File \"a.py\", line 1, in f",
        "(Worker_TP1 pid=2) Traceback (most recent call last):",
        "(Worker_TP1 pid=2)   File \"a.py\", line 1, in f", "(Worker_TP1 pid=2) ValueError: done"});
  const int64_t t0 = sink_.records.back().time_us;
  ASSERT_GT(t0, 0);
  parser_->Tick(t0);  // same instant: nothing is old enough
  EXPECT_TRUE(sink_.tracebacks.empty());
  parser_->Tick(t0 + 1);  // the pending one goes, the open one is not idle long enough
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  EXPECT_TRUE(sink_.tracebacks[0].complete);
  EXPECT_EQ(sink_.tracebacks[0].worker->tp, 1);
  parser_->Tick(t0 + 5'000'001);
  ASSERT_EQ(sink_.tracebacks.size(), 2u);
  EXPECT_FALSE(sink_.tracebacks[1].complete);
  EXPECT_EQ(sink_.tracebacks[1].worker->tp, 0);
}

TEST_F(TracebackAssemblerTest, FinishFlushesAnOpenTracebackAsIncomplete) {
  FeedAll({"Traceback (most recent call last):", "  File \"a.py\", line 1, in f"});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  EXPECT_FALSE(sink_.tracebacks[0].complete);
}

TEST_F(TracebackAssemblerTest, FrameCapKeepsTheOutermostAndInnermostFramesAndCountsTheCut) {
  ParserOptions options;
  options.max_traceback_frames = 4;  // one head frame, three innermost
  Start(options);
  std::vector<std::string> lines = {"Traceback (most recent call last):"};
  for (int i = 0; i < 10; ++i) {
    lines.push_back("  File \"f.py\", line " + std::to_string(i) + ", in fn" + std::to_string(i));
  }
  lines.push_back("RecursionError: deep");
  FeedAll(lines);
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_TRUE(tb.truncated);
  EXPECT_TRUE(tb.complete);
  EXPECT_EQ(Functions(tb.blocks[0]), (std::vector<std::string>{"fn0", "fn7", "fn8", "fn9"}));
  EXPECT_EQ(tb.dropped_frames, 6u);
  EXPECT_EQ(events_.Dropped(DropReason::kTracebackTruncated), 1u);
}

TEST_F(TracebackAssemblerTest, ByteCapBoundsTheTraceback) {
  ParserOptions options;
  options.max_traceback_bytes = 600;
  Start(options);
  std::vector<std::string> lines = {"Traceback (most recent call last):"};
  for (int i = 0; i < 50; ++i) {
    lines.push_back("  File \"/very/long/path/" + std::string(40, 'p') + ".py\", line 1, in f" +
                    std::to_string(i));
    lines.push_back("    " + std::string(60, 'c'));
  }
  lines.push_back("ValueError: " + std::string(2000, 'm'));
  FeedAll(lines);
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_TRUE(tb.truncated);
  size_t bytes = tb.blocks[0].message.size();
  for (const Frame& f : tb.blocks[0].frames)
    bytes += f.file.size() + f.function.size() + f.code.size();
  EXPECT_LE(bytes, 600u);
  EXPECT_FALSE(tb.blocks[0].frames.empty());
  EXPECT_EQ(tb.blocks[0].frames.back().function, "f49");
  EXPECT_EQ(events_.Dropped(DropReason::kTracebackTruncated), 1u);
}

TEST_F(TracebackAssemblerTest, SglangSchedulerRecordWithRawContinuationIsOneTraceback) {
  FeedAll(
      {"[2025-11-03 18:48:34 TP7] Scheduler hit an exception: Traceback (most recent call last):",
       "  File \"/sgl/scheduler.py\", line 2810, in run_scheduler_process",
       "    scheduler.event_loop_overlap()", "RuntimeError: Unknown SF transformation",
       "[2025-11-03 18:48:35] Received sigquit from a child process."});
  ASSERT_EQ(sink_.tracebacks.size(), 1u);
  const Traceback& tb = sink_.tracebacks[0];
  EXPECT_EQ(tb.worker->tp, 7);
  EXPECT_EQ(tb.FrameCount(), 1u);
  EXPECT_EQ(tb.blocks[0].type, "RuntimeError");
}

}  // namespace
}  // namespace fingerprintd::parse
