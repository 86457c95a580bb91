// Names and helpers of the shared line model.
#include "fingerprintd/log_record.h"

#include <gtest/gtest.h>

#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/traceback.h"

namespace fingerprintd {
namespace {

TEST(ParseLevelTest, AcceptsPythonNamesAndSingleLetters) {
  EXPECT_EQ(ParseLevel("INFO"), Level::kInfo);
  EXPECT_EQ(ParseLevel("WARNING"), Level::kWarning);
  EXPECT_EQ(ParseLevel("WARN"), Level::kWarning);
  EXPECT_EQ(ParseLevel("ERROR"), Level::kError);
  EXPECT_EQ(ParseLevel("CRITICAL"), Level::kCritical);
  EXPECT_EQ(ParseLevel("DEBUG"), Level::kDebug);
  EXPECT_EQ(ParseLevel("E"), Level::kError);
  EXPECT_EQ(ParseLevel("F"), Level::kCritical);
  EXPECT_EQ(ParseLevel("V"), Level::kDebug);
  EXPECT_EQ(ParseLevel("info"), Level::kUnknown);
  EXPECT_EQ(ParseLevel(""), Level::kUnknown);
  EXPECT_EQ(LevelName(Level::kWarning), "WARNING");
  EXPECT_EQ(LevelName(Level::kUnknown), "UNKNOWN");
}

TEST(ParseNamesTest, MetricLabelValuesAreStable) {
  EXPECT_EQ(DropReasonName(DropReason::kLineTooLong), "line_too_long");
  EXPECT_EQ(DropReasonName(DropReason::kPartialTooLong), "partial_too_long");
  EXPECT_EQ(DropReasonName(DropReason::kInvalidUtf8), "invalid_utf8");
  EXPECT_EQ(DropReasonName(DropReason::kBinary), "binary");
  EXPECT_EQ(DropReasonName(DropReason::kBadEnvelope), "bad_envelope");
  EXPECT_EQ(DropReasonName(DropReason::kTracebackTruncated), "traceback_truncated");
  EXPECT_EQ(EvictedName(Evicted::kProcessStream), "process_stream");
  EXPECT_EQ(TimeFallbackName(TimeFallback::kYearFromMtime), "year_from_mtime");
  EXPECT_EQ(TimeFallbackName(TimeFallback::kYearFromClock), "year_from_clock");
  EXPECT_EQ(TimeFallbackName(TimeFallback::kNoTimestamp), "no_timestamp");
  EXPECT_EQ(ProcessRoleName(ProcessRole::kWorker), "worker");
  EXPECT_EQ(ProcessRoleName(ProcessRole::kEngineCore), "engine_core");
  EXPECT_EQ(ProcessRoleName(ProcessRole::kApiServer), "api_server");
}

TEST(WorkerInfoTest, GlobalRankPrefersTheExplicitRank) {
  WorkerInfo w;
  EXPECT_EQ(w.GlobalRank(2), -1);
  w.tp = 1;
  EXPECT_EQ(w.GlobalRank(0), 1);
  w.pp = 1;
  EXPECT_EQ(w.GlobalRank(2), 3);
  EXPECT_EQ(w.GlobalRank(0), -1);  // tp size unknown: cannot tell
  w.rank = 5;
  EXPECT_EQ(w.GlobalRank(2), 5);
}

TEST(WorkerInfoTest, LabelNamesTheProcess) {
  WorkerInfo w;
  EXPECT_EQ(w.Label(), "(unprefixed)");
  w.name = "Worker_TP1";
  w.pid = 8761;
  EXPECT_EQ(w.Label(), "Worker_TP1 pid=8761");
  w.name = "RayWorkerWrapper";
  w.pid = 340;
  w.ip = "10.10.10.2";
  EXPECT_EQ(w.Label(), "RayWorkerWrapper pid=340 ip=10.10.10.2");
}

TEST(TracebackRootCauseTest, SkipsRayWrappersAndEmptyBlocks) {
  Traceback tb;
  EXPECT_EQ(tb.RootCause(), nullptr);
  tb.blocks.resize(3);
  tb.blocks[0].type = "ray.exceptions.RayTaskError(RuntimeError)";
  tb.blocks[0].frames.resize(2);
  tb.blocks[2].type = "RuntimeError";
  tb.blocks[2].frames.resize(3);
  ASSERT_NE(tb.RootCause(), nullptr);
  EXPECT_EQ(tb.RootCause(), &tb.blocks[2]);
  EXPECT_EQ(tb.FrameCount(), 5u);
}

}  // namespace
}  // namespace fingerprintd
