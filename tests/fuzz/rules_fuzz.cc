// libFuzzer target: the rule loader (strict YAML, RE2 compilation, the
// literal prefilter). The input is one rule file. Invariants: loading is
// deterministic (same text, same outcome and message), every loaded rule has
// an id and at least one stage, and a loaded pack matches its own text
// without crashing (every pattern id it returns resolves).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fingerprintd/rules.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // The first line chooses the file name: `facts.yaml` holds facts and kernel_support.
  std::string name = !text.empty() && text[0] == 'f' ? "facts.yaml" : "fuzz.yaml";
  std::vector<std::pair<std::string, std::string>> files{{name, text}};
  auto first = fingerprintd::rules::LoadRuleTexts(files);
  auto second = fingerprintd::rules::LoadRuleTexts(files);
  FUZZ_CHECK(first.ok() == second.ok());
  if (!first.ok()) {
    FUZZ_CHECK(first.status().message() == second.status().message());
    FUZZ_CHECK(!first.status().message().empty());
    return 0;
  }
  const fingerprintd::rules::RuleSet& set = **first;
  FUZZ_CHECK(set.rules().size() == (*second)->rules().size());
  for (const auto& rule : set.rules()) {
    FUZZ_CHECK(!rule.id.empty());
    FUZZ_CHECK(!rule.stages.empty());
  }
  fingerprintd::rules::RuleSet::MatchScratch scratch;
  std::vector<int> ids;
  set.Match(text, fingerprintd::Level::kError, &scratch, &ids);
  for (int id : ids) {
    const auto& ref = set.Ref(id);
    if (ref.kind == fingerprintd::rules::RuleSet::PatternRef::kStage) {
      FUZZ_CHECK(ref.owner < set.rules().size());
    } else {
      FUZZ_CHECK(ref.owner < set.facts().size());
    }
    (void)set.Pattern(id);
  }
  return 0;
}
