// The parser skips a line only when the read buffer's search found none of
// QuietLineTriggers() in it. The triggers are not a list of their own: each
// stage that reacts to a line's text exports what it reacts to, and the list
// is their union. Each stage is checked here against text without its
// triggers (near misses included): such text leaves its state as it was.
// A trigger added to a stage's reading without its list fails these tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <string>
#include <vector>

#include "parse/line_templates.h"
#include "parse/paste_wrappers.h"
#include "parse/rank_learning.h"
#include "parse/traceback_assembler.h"
#include "parse/traceback_lines.h"
#include "testing/collecting_sink.h"
#include "testing/counting_events.h"

namespace fingerprintd::parse {
namespace {

using ::fingerprintd::testing::CollectingSink;
using ::fingerprintd::testing::CountingEvents;

bool HoldsAny(const std::string& text, const std::vector<std::string>& triggers) {
  std::string lowered = text;
  for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::any_of(triggers.begin(), triggers.end(),
                     [&](const std::string& t) { return lowered.find(t) != std::string::npos; });
}

// Random text from pieces that come close to what the stages read (cut
// triggers, their punctuation, digits), keeping only text holding none of
// `triggers`. Every eighth text is a piece alone.
std::vector<std::string> TriggerFreeTexts(const std::vector<std::string>& triggers, uint32_t seed) {
  static const std::vector<std::string> kPieces = {
      "Traceback (most recent call",
      "  File",
      "File \"x.py\", line 3",
      "Erro",
      "rror",
      "Exceptio",
      "Warnin",
      "Interrup",
      "Exi",
      "RuntimeErr: x",
      "ValueErro: y",
      ": ",
      "parallel_stat",
      "world_size=2 rank=1 local_rank=0",
      "rank 1 in world size 2 is assigned",
      " TP rank 1",
      "100%|",
      "#####|",
      " 4/4 [00:02<00:00,  1.50",
      "it/s",
      "s/it",
      "]",
      "[",
      "(",
      ")",
      "INFO ",
      "The above exception was",
      "    ^^^^",
      "x.py:12",
      " ",
      "abc",
      "0",
      "KeyError",
      "Warning",  // whole triggers: dropped when kept
  };
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  while (out.size() < 3000) {
    std::string text;
    const size_t pieces = rng() % 8 == 0 ? 1 : 1 + rng() % 6;
    for (size_t i = 0; i < pieces; ++i) text += kPieces[rng() % kPieces.size()];
    if (!HoldsAny(text, triggers)) out.push_back(text);
  }
  return out;
}

TEST(QuietLineTriggersTest, TheListIsTheUnionOfWhatEachStageReactsTo) {
  std::vector<std::string> expected = TracebackTriggers();
  for (const auto* owner : {&RankLearningTriggers(), &ProgressBarTriggers()}) {
    expected.insert(expected.end(), owner->begin(), owner->end());
  }
  EXPECT_EQ(QuietLineTriggers(), expected);
  for (const std::string& t : QuietLineTriggers()) {
    EXPECT_FALSE(t.empty());
    for (char c : t) EXPECT_FALSE(c >= 'A' && c <= 'Z') << t;  // matched in any case
  }
}

TEST(QuietLineTriggersTest, TextWithoutTheTracebackTriggersLeavesAnIdleStreamIdle) {
  const std::vector<std::string>& triggers = TracebackTriggers();
  CountingEvents events;
  CollectingSink sink;
  ParserOptions options;
  TracebackAssembler assembler(1, options, events, sink);
  WorkerInfo worker;
  worker.id = 0;
  uint64_t line = 0;
  for (const std::string& text : TriggerFreeTexts(triggers, 7)) {
    for (const bool headered : {false, true}) {
      TracebackInput in;
      in.worker = &worker;
      in.message = text;
      in.has_header = headered;
      in.header_text = headered ? "INFO 01-02 03:04:05 [a.py:1]" : "";
      in.level = headered ? Level::kInfo : Level::kUnknown;
      in.line_number = ++line;
      const TracebackOutput out = assembler.Process(in);
      EXPECT_EQ(out.kind, LineKind::kMessage) << text;
      EXPECT_FALSE(assembler.HoldsAny()) << text;
    }
  }
  EXPECT_TRUE(sink.tracebacks.empty());
  // The same stream reacts to a trigger: the generator's texts came close.
  TracebackInput in;
  in.worker = &worker;
  in.message = "Traceback (most recent call last):";
  in.line_number = ++line;
  assembler.Process(in);
  EXPECT_TRUE(assembler.HoldsAny());
}

TEST(QuietLineTriggersTest, TextWithoutTheRankLearningTriggersLeavesTheRanksAlone) {
  const std::vector<std::string>& triggers = RankLearningTriggers();
  const std::vector<std::string> texts = TriggerFreeTexts(triggers, 8);
  for (size_t i = 0; i + 1 < texts.size(); i += 2) {
    WorkerInfo worker;
    worker.role = ProcessRole::kWorker;
    LearnRank(&worker, texts[i], texts[i + 1]);  // a location and a message
    EXPECT_EQ(worker.rank, -1) << texts[i] << " | " << texts[i + 1];
    EXPECT_EQ(worker.tp, -1);
  }
  WorkerInfo worker;
  worker.role = ProcessRole::kWorker;
  LearnRank(&worker, "parallel_state.py:1", "world_size=2 rank=1 local_rank=0");
  EXPECT_EQ(worker.rank, 1);
}

TEST(QuietLineTriggersTest, TextWithoutTheProgressBarTriggersIsNoProgressBar) {
  for (const std::string& text : TriggerFreeTexts(ProgressBarTriggers(), 9)) {
    const std::string line = text + "RuntimeError: x";
    EXPECT_EQ(AfterProgressBar(line), line) << line;
  }
  EXPECT_EQ(AfterProgressBar(" 50%|#####     | 2/4 [00:01<00:01,  1.50it/s]RuntimeError: x"),
            "RuntimeError: x");
}

}  // namespace
}  // namespace fingerprintd::parse
