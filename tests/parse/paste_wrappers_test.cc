// Paste wrappers: other tools' marks around a log line are removed before the
// line is read, and lines that merely look similar are left alone.
#include "parse/paste_wrappers.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "parse/header.h"

namespace fingerprintd::parse {
namespace {

TEST(PasteWrappersTest, MarkdownQuoteMarkersAreRemovedAtAnyDepth) {
  EXPECT_EQ(StripPasteWrappers("> KeyError: 'lm_head.weight'"), "KeyError: 'lm_head.weight'");
  EXPECT_EQ(StripPasteWrappers("> > INFO 01-02 03:04:05 [a.py:1] x"),
            "INFO 01-02 03:04:05 [a.py:1] x");
  EXPECT_EQ(StripPasteWrappers(">"), "");
  EXPECT_EQ(StripPasteWrappers("> "), "");
}

TEST(PasteWrappersTest, ConsoleTimestampsInBracketsAreRemovedThenTheEngineHeaderIsRead) {
  std::string_view line = StripPasteWrappers(
      "> [2026-02-17T08:41:19.116Z] [2026-02-17 08:41:19 TP2] Scheduler hit an exception:");
  EXPECT_EQ(line, "[2026-02-17 08:41:19 TP2] Scheduler hit an exception:");
  Header h;
  ASSERT_TRUE(ParseHeader(line, &h));
  EXPECT_EQ(h.kind, HeaderKind::kSglang);
  EXPECT_EQ(h.message, "Scheduler hit an exception:");
}

TEST(PasteWrappersTest, GithubActionsTimestampIsRemovedButACriEnvelopeIsNot) {
  EXPECT_EQ(StripPasteWrappers("2026-02-17T08:41:19.1160000Z RuntimeError: x"), "RuntimeError: x");
  const std::string_view cri = "2026-02-17T08:41:19.116Z stdout F RuntimeError: x";
  EXPECT_EQ(StripPasteWrappers(cri), cri);
}

TEST(PasteWrappersTest, GrepLineNumbersAreRemovedButTimesAndDatesAreNot) {
  EXPECT_EQ(StripPasteWrappers("4411:(Worker_TP1 pid=6) ERROR x"), "(Worker_TP1 pid=6) ERROR x");
  EXPECT_EQ(StripPasteWrappers("17-  File \"a.py\", line 3, in f"),
            "  File \"a.py\", line 3, in f");
  EXPECT_EQ(StripPasteWrappers("12:34:56 started"), "12:34:56 started");
  EXPECT_EQ(StripPasteWrappers("2026-01-02 03:04:05,678 - x - INFO - y"),
            "2026-01-02 03:04:05,678 - x - INFO - y");
  EXPECT_EQ(StripPasteWrappers("1       0x7f5fe6888d85 libx.so(+0x35d85)"),
            "1       0x7f5fe6888d85 libx.so(+0x35d85)");
}

TEST(PasteWrappersTest, KubectlPrefixAndTorchServeModelLogAreRemoved) {
  EXPECT_EQ(StripPasteWrappers("[pod/chat-llm-6b9f-qz8kd/vllm] INFO 03-22 05:17:31 config.py:1] x"),
            "INFO 03-22 05:17:31 config.py:1] x");
  EXPECT_EQ(StripPasteWrappers("2026-06-03T10:22:41,100 [INFO ] W-9000-qwen_1.0-stdout MODEL_LOG - "
                               "ERROR 06-03 10:22:41 [x.py:1] y"),
            "ERROR 06-03 10:22:41 [x.py:1] y");
}

TEST(PasteWrappersTest, UnwrappedLinesAreReturnedUnchanged) {
  for (std::string_view line : {"(Worker_TP0 pid=1) INFO 01-02 03:04:05 [a.py:1] x",
                                "[rank0]:[W102 03:04:05.1 ProcessGroupNCCL.cpp:1] y",
                                "[2026-01-02 03:04:05 TP0] Load weight begin.",
                                "  File \"/a.py\", line 3, in f", "RuntimeError: x"}) {
    EXPECT_EQ(StripPasteWrappers(line), line);
  }
}

TEST(PasteWrappersTest, MessageGluedToAProgressBarIsSplitOff) {
  EXPECT_EQ(AfterProgressBar("Loading shards: 100%|##########| 10/10 [00:21<00:00,  2.10s/it]"
                             "ValueError: Free memory on device"),
            "ValueError: Free memory on device");
  EXPECT_EQ(AfterProgressBar("DeepGEMM warmup: 100%|####| 8/8 [00:01<00:00,  5.2it/s]ERROR x"),
            "ERROR x");
  const std::string_view bar = "Capturing graphs: 100%|######| 67/67 [00:12<00:00,  5.43it/s]";
  EXPECT_EQ(AfterProgressBar(bar), bar);
  EXPECT_EQ(AfterProgressBar("GPU memory utilization 90% is high"),
            "GPU memory utilization 90% is high");
}

TEST(HeaderWildTest, NimHeaderWithAYearIsAVllmHeader) {
  Header h;
  ASSERT_TRUE(
      ParseHeader("ERROR 2025-03-03 09:12:40.101 engine_factory.py:58] Bfloat16 is only", &h));
  EXPECT_EQ(h.level, Level::kError);
  EXPECT_EQ(h.time.year, 2025);
  EXPECT_EQ(h.time.micros, 101000);
  EXPECT_EQ(h.location, "engine_factory.py:58");
  EXPECT_EQ(h.message, "Bfloat16 is only");
}

TEST(HeaderWildTest, CppTerminateWhatLineIsCriticalWithTheInnerTensorRtHeaderRemoved) {
  Header h;
  ASSERT_TRUE(ParseHeader("  what():  [TensorRT-LLM][ERROR] Assertion failed: FP8 FMHA x", &h));
  EXPECT_EQ(h.kind, HeaderKind::kCppTerminate);
  EXPECT_EQ(h.level, Level::kCritical);
  EXPECT_EQ(h.message, "Assertion failed: FP8 FMHA x");
  ASSERT_TRUE(ParseHeader("  what():  CUDA error: an illegal memory access", &h));
  EXPECT_EQ(h.message, "CUDA error: an illegal memory access");
  EXPECT_FALSE(ParseHeader("    what a traceback code line", &h));
}

// NoWrapperCanStart(head) promises that no line starting with `head` loses
// a wrapper: checked on every start of lines that have one and lines that
// do not, each continued by random text.
TEST(PasteWrappersTest, NoWrapperCanStartOnlyWhereNoLineStartingSoHasAWrapper) {
  const std::vector<std::string> lines = {"> KeyError: 'x'",
                                          "[2025-11-06T02:10:00.702Z] INFO x",
                                          "[pod/vllm-0/vllm] INFO x",
                                          "2025-11-06T02:10:00.7020000Z RuntimeError: x",
                                          "1234:RuntimeError: x",
                                          "12-x",
                                          "[2026-03-04 10:15:22 TP0] Decode batch.",
                                          "[01/16/2026-06:20:17] [TRT-LLM] [I] x",
                                          "(Worker pid=7) INFO 03-04 10:15:22 [a.py:1] x",
                                          "INFO 03-04 10:15:22 [a.py:1] x",
                                          "vllm-0:1:2 [0] NCCL INFO x",
                                          "[rank0]: Traceback",
                                          "[TensorRT-LLM][INFO] x",
                                          "[p",
                                          "[po"};
  const std::string tails = "0123456789-T:.Z ]/abcp> [";
  std::mt19937 rng(31);
  for (const std::string& line : lines) {
    for (size_t n = 1; n <= line.size(); ++n) {
      const std::string head = line.substr(0, n);
      if (!NoWrapperCanStart(head)) continue;
      for (int round = 0; round < 200; ++round) {
        std::string text = head;
        const size_t more = rng() % 40;
        for (size_t i = 0; i < more; ++i) text += tails[rng() % tails.size()];
        if (round == 0) text = line;
        EXPECT_EQ(StripPasteWrappers(text), text) << "head `" << head << "`";
      }
    }
  }
  EXPECT_FALSE(NoWrapperCanStart(">"));
  EXPECT_FALSE(NoWrapperCanStart("[2025-11-06T"));
  EXPECT_FALSE(NoWrapperCanStart("[pod"));
  EXPECT_FALSE(NoWrapperCanStart("1234"));
  EXPECT_TRUE(NoWrapperCanStart("[2026-03-04 "));
  EXPECT_TRUE(NoWrapperCanStart("[01/"));
  EXPECT_TRUE(NoWrapperCanStart("(Worker"));
}

}  // namespace
}  // namespace fingerprintd::parse
