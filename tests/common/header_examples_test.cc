// The usage examples in the public headers' opening comments, compiled and
// run: an example that no longer compiles is a comment that no longer holds.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "fingerprintd/rules.h"
#include "fingerprintd/status.h"
#include "testing/counting_events.h"

namespace fingerprintd {
namespace {

// A RuleEngine's hits go nowhere: the example is about the wiring.
class NullHitSink final : public rules::HitSink {
 public:
  void OnHit(rules::RuleHit) override {}
  void OnFact(uint32_t, const std::string&, const std::string&) override {}
  void OnWorkerSeen(uint32_t, const WorkerInfo&) override {}
  void OnWorkerRank(uint32_t, const WorkerInfo&) override {}
};

// status.h
int StatusExample() {
  // clang-format off
  StatusOr<std::shared_ptr<const rules::RuleSet>> pack = rules::LoadRuleDir("rules/");
  if (!pack.ok()) { std::cerr << pack.status().message() << "\n"; return 2; }
  const rules::RuleSet& rule_set = **pack;
  // clang-format on
  return rule_set.rules().empty() ? 1 : 0;
}

// rules.h
Status RulesExample(uint32_t source_id, const std::string& name, parse::ParserOptions options,
                    PipelineEvents& events, rules::HitSink& hit_sink) {
  StatusOr<std::shared_ptr<const rules::RuleSet>> pack = rules::LoadRuleDir("rules/");
  if (!pack.ok()) return pack.status();
  rules::RuleEngine engine(*pack, source_id, events, hit_sink);  // a parse::RecordSink
  parse::SourceParser parser(source_id, name, options, events, engine);
  parser.Feed("INFO 04-25 07:11:27 [a.py:1] hello");
  parser.Finish();
  engine.Finish();
  return OkStatus();
}

TEST(HeaderExamplesTest, StatusAndRulesExamplesCompileAndRun) {
  // "rules/" in the examples is the pack in the source tree.
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(FINGERPRINTD_SOURCE_DIR);
  EXPECT_EQ(StatusExample(), 0);
  testing::CountingEvents events;
  NullHitSink hits;
  Status s = RulesExample(1, "x.log", parse::ParserOptions{}, events, hits);
  EXPECT_TRUE(s.ok()) << s.message();
  std::filesystem::current_path(cwd);
}

}  // namespace
}  // namespace fingerprintd
