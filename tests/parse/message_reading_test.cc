// Message reading: a message split by a paste or printed in another notation
// reads as the text a person sees, and ordinary lines are left as they are.
#include "parse/message_reading.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace fingerprintd::parse {
namespace {

TEST(MessageReadingTest, APieceEndingWhereAMessageCannotLooksCutOff) {
  EXPECT_TRUE(LooksCutOff("RuntimeError: dispatch_scaled_mm,"));
  EXPECT_TRUE(LooksCutOff("RuntimeError: Assertion error (/ws/csrc/apis/layout.hpp:60):"));
  EXPECT_TRUE(LooksCutOff("ValueError: expected one of ("));
  EXPECT_TRUE(LooksCutOff("RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc"));
  EXPECT_TRUE(LooksCutOff(std::string(kNarrowestTerminal, 'x')));
  EXPECT_FALSE(LooksCutOff("RuntimeError: Assertion error"));
  EXPECT_FALSE(LooksCutOff("KeyError: 'model.layers.0.mlp.down_proj.weight_scale' (see above)"));
  EXPECT_FALSE(LooksCutOff(""));
}

TEST(MessageReadingTest, ALocationOrClosingPunctuationCannotStartARecord) {
  EXPECT_TRUE(CannotStartRecord("(/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60):"));
  EXPECT_TRUE(CannotStartRecord("(.../csrc/apis/layout.hpp:60): Unknown SF transformation"));
  EXPECT_TRUE(
      CannotStartRecord("/workspace/csrc/quantization/cutlass/c3x/scaled_mm_helper.hpp:17"));
  EXPECT_TRUE(CannotStartRecord("csrc/attention/decode.cu:118:7,"));
  EXPECT_TRUE(CannotStartRecord(") from a worker"));
  EXPECT_TRUE(CannotStartRecord(", 'the current GPU.')"));
}

TEST(MessageReadingTest, OrdinaryFirstLinesCanStartARecord) {
  EXPECT_FALSE(CannotStartRecord("Unknown SF transformation"));
  EXPECT_FALSE(CannotStartRecord("(Worker_TP0 pid=101) ERROR 03-04 10:15:22 [x.py:1] boom"));
  EXPECT_FALSE(
      CannotStartRecord("/usr/lib/python3/dist-packages/torch/cuda/__init__.py:235: "
                        "UserWarning: sm_120 is not compatible"));
  EXPECT_FALSE(CannotStartRecord("[rank0]: RuntimeError: NCCL error"));
  EXPECT_FALSE(CannotStartRecord("INFO 03-04 10:12:10 [gpu_model_runner.py:2338] Starting"));
  EXPECT_FALSE(CannotStartRecord("version: 0.11.2"));
  EXPECT_FALSE(CannotStartRecord(""));
}

TEST(MessageReadingTest, WrapsAreJoinedWithASpaceButAMidWordTerminalCutIsGlued) {
  std::string text = "RuntimeError: Assertion error";
  AppendWrapped(&text, text.size(), "(/ws/csrc/apis/layout.hpp:60):");
  AppendWrapped(&text, 31, "Unknown SF transformation");
  EXPECT_EQ(text,
            "RuntimeError: Assertion error (/ws/csrc/apis/layout.hpp:60): Unknown SF "
            "transformation");

  std::string wrapped(kNarrowestTerminal - 5, 'a');
  wrapped += " tran";
  AppendWrapped(&wrapped, wrapped.size(), "sformation");
  EXPECT_EQ(wrapped.substr(wrapped.size() - 15), " transformation");
}

TEST(MessageReadingTest, AReprTupleOfStringsReadsAsItsText) {
  std::string out;
  ASSERT_TRUE(ReadReprStrings(
      "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min "
      "capability: 80. ', 'Current capability: 70.')",
      &out));
  EXPECT_EQ(out,
            "RuntimeError: Quantization scheme is not supported for the current GPU. Min "
            "capability: 80. Current capability: 70.");
}

TEST(MessageReadingTest, AReprTupleWithDoubleQuotesAndEscapesReadsAsItsText) {
  std::string out;
  ASSERT_TRUE(ReadReprStrings(R"(ValueError: ("model's head ", 'is \'tied\'', "\\ok"))", &out));
  EXPECT_EQ(out, R"(ValueError: model's head is 'tied'\ok)");
  ASSERT_TRUE(ReadReprStrings("ray.exceptions.RayTaskError(RuntimeError): ('a ', 'b')  ", &out));
  EXPECT_EQ(out, "ray.exceptions.RayTaskError(RuntimeError): a b");
  ASSERT_TRUE(ReadReprStrings("('not supported for ', 'this GPU')", &out));
  EXPECT_EQ(out, "not supported for this GPU");
}

// A list, or a tuple the message quotes among its words, is a value: its
// quotes are what tells its items apart.
TEST(MessageReadingTest, AQuotedListOrTupleInsideAMessageKeepsItsQuotes) {
  std::string out = "unchanged";
  EXPECT_FALSE(ReadReprStrings(
      "ValueError: Model architectures ['FooForCausalLM', 'BarModel'] are not supported", &out));
  EXPECT_FALSE(ReadReprStrings("KeyError: ['layers.0.w_scale', 'layers.1.w_scale']", &out));
  EXPECT_FALSE(ReadReprStrings("ValueError: Valid backends: ('ALPHA_ATTN', 'BETA_ATTN')", &out));
  EXPECT_FALSE(ReadReprStrings("RuntimeError: ('a ', 'b') and more words", &out));
  EXPECT_FALSE(ReadReprStrings("Error in step 3: ('a ', 'b')", &out));
  EXPECT_EQ(out, "unchanged");
}

TEST(MessageReadingTest, TextThatOnlyLooksLikeAReprIsLeftAlone) {
  std::string out = "unchanged";
  EXPECT_FALSE(ReadReprStrings("KeyError: 'model.layers.0.mlp.down_proj.weight_scale'", &out));
  EXPECT_FALSE(ReadReprStrings("ValueError: ('only one string',)", &out));
  EXPECT_FALSE(ReadReprStrings("args=('a', 1, 'b')", &out));
  EXPECT_FALSE(ReadReprStrings("tuple ('a', 'b' left open", &out));
  EXPECT_FALSE(ReadReprStrings("INFO 03-04 10:12:01 [core.py:93] Initializing", &out));
  EXPECT_EQ(out, "unchanged");
}

TEST(MessageReadingTest, AJsonRecordWithEscapedNewlinesReadsAsItsLines) {
  std::vector<std::string> lines;
  ASSERT_TRUE(SplitEscapedLines(
      R"({"level": "error", "msg": "Traceback (most recent call last):\n  File \"/app/x.py\", )"
      R"(line 3, in load\n    run()\nRuntimeError: CUDA error: out of memory\n"})",
      &lines));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "Traceback (most recent call last):");
  EXPECT_EQ(lines[1], R"(  File "/app/x.py", line 3, in load)");
  EXPECT_EQ(lines[2], "    run()");
  EXPECT_EQ(lines[3], "RuntimeError: CUDA error: out of memory");
}

TEST(MessageReadingTest, AnEscapedNewlineOutsideAJsonRecordStaysInItsMessage) {
  std::vector<std::string> lines = {"kept"};
  EXPECT_FALSE(SplitEscapedLines(
      R"(RuntimeError: Worker failed with error 'CUDA error: out of memory\nCUDA kernel errors')",
      &lines));
  EXPECT_FALSE(SplitEscapedLines(R"({"msg": "no newline here"})", &lines));
  EXPECT_FALSE(SplitEscapedLines(R"({"path": "C:\\new\\x"})", &lines));
  EXPECT_EQ(lines, std::vector<std::string>{"kept"});
}

// ReadsAsWritten vouches for what buffer-first skipping leaves unread: a
// message it passes reads as itself, whatever its length.
TEST(MessageReadingTest, AMessageReadsAsWrittenOnlyWhenNeitherReprNorEscapesChangeIt) {
  std::mt19937 rng(41);
  const std::string alphabet = "ab '\"(),[]{}\\n:";
  for (int round = 0; round < 20000; ++round) {
    std::string message(rng() % 90, 'a');
    for (char& c : message) c = alphabet[rng() % alphabet.size()];
    if (!ReadsAsWritten(message)) continue;
    std::string out;
    std::vector<std::string> lines;
    EXPECT_FALSE(ReadReprStrings(message, &out)) << message;
    EXPECT_FALSE(SplitEscapedLines(message, &lines)) << message;
  }
  EXPECT_FALSE(ReadsAsWritten("RuntimeError: ('not supported for ', 'the current GPU.')"));
  EXPECT_FALSE(ReadsAsWritten(std::string(60, 'x') + "['a', \"b\"]"));  // past 32 bytes
  EXPECT_FALSE(ReadsAsWritten(R"({"msg": "a\nb"})"));
  EXPECT_TRUE(ReadsAsWritten("INFO:     10.0.0.1:5 - \"POST /v1 HTTP/1.1\" 200 OK"));
}

}  // namespace
}  // namespace fingerprintd::parse
