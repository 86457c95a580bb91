// Hard-wrapped messages: a failure message cut over two or three physical
// lines (a terminal, a Markdown list, a blog's code block) is recognised as
// one message, and long ordinary lines next to bare ones are not glued into
// a failure that is not there.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(RejoinTest, ExceptionWrappedOverThreeLinesIsTheTarget) {
  auto incidents = ReplayString(
      "(Worker_TP0 pid=71) ERROR 05-06 07:08:09 [multiproc_executor.py:751] RuntimeError: "
      "Assertion "
      "error\n"
      "(/opt/x/.deps/deepgemm-src/csrc/apis/layout.hpp:58):\n"
      "Unknown SF transformation\n");
  ASSERT_THAT(RuleIds(incidents), ElementsAre("deepgemm-unknown-sf-transformation"));
  EXPECT_EQ(incidents[0].affected, 1);
}

TEST(RejoinTest, CppErrorCutMidWordAtTheTerminalWidthIsRecognised) {
  auto incidents = ReplayString(
      "E0211 04:05:06.123456 4242 backend_model.cc:553] ERROR: Failed to create instance: "
      "unexpected "
      "error when creating modelInstanceState: [TensorRT-LLM][ERROR] CUDA runtime error in "
      "::cudaMallocAsync(ptr, n, mStr\n"
      "eam->get()): out of memory (/src/cpp/tensorrt_llm/runtime/buffers.h:90)\n"
      "1       0x7f00aa000d85 /opt/backends/libx.so(+0x35d85) [0x7f00aa000d85]\n");
  EXPECT_THAT(RuleIds(incidents), ElementsAre("cuda-out-of-memory"));
}

TEST(RejoinTest, LongInfoLinesFollowedByBareLinesAreNotGlued) {
  // INFO lines are never carried: "out of" / "memory" split over an INFO line
  // and a bare progress line must not become an OOM.
  auto incidents = ReplayString(
      "INFO 05-06 07:08:09 [gpu_worker.py:300] Memory profiling takes 3.2 seconds; the CUDA "
      "runtime "
      "error in a dry run was retried and did not run out of\n"
      "memory; continuing\n");
  EXPECT_THAT(RuleIds(incidents), IsEmpty());
}

TEST(RejoinTest, ASymptomOnOneLineIsNotReportedTwiceWhenTheNextLineContinuesIt) {
  auto incidents = ReplayString(
      "(EngineCore_DP0 pid=8) ERROR 05-06 07:08:09 [core.py:700] torch.OutOfMemoryError: CUDA out "
      "of "
      "memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.55 GiB of which 1.02 "
      "GiB "
      "is free. Including non-PyTorch memory, this process has\n"
      "22.51 GiB memory in use.\n");
  ASSERT_THAT(RuleIds(incidents), ElementsAre("cuda-out-of-memory"));
  EXPECT_EQ(incidents[0].affected, 1);
}

}  // namespace
}  // namespace fingerprintd::testing
