// Runs the tests embedded in rule files. A test passes when the incidents its
// log yields are exactly the expected ones (rule, confidence, affected count,
// occurrences, and open or the close reason at the end of the log), as a
// multiset, in any order. Also lints that every rule has enough of them.
#include <algorithm>
#include <map>
#include <sstream>

#include "fingerprintd/source.h"

namespace fingerprintd::source {
namespace {

std::string Describe(const correlate::Incident& i) {
  std::ostringstream out;
  out << "{rule: " << i.rule->id << ", confidence: " << rules::ConfidenceName(i.confidence)
      << ", affected: " << i.affected << ", occurrences: " << i.occurrences
      << ", closed: " << correlate::CloseReasonName(i.closed) << "}";
  return out.str();
}

std::string Describe(const rules::RuleTest::Expected& e) {
  std::ostringstream out;
  out << "{rule: " << e.rule;
  if (!e.confidence.empty()) out << ", confidence: " << e.confidence;
  if (e.affected >= 0) out << ", affected: " << e.affected;
  if (e.occurrences >= 1) out << ", occurrences: " << e.occurrences;
  if (!e.closed.empty()) out << ", closed: " << e.closed;
  out << "}";
  return out.str();
}

bool Matches(const rules::RuleTest::Expected& e, const correlate::Incident& i) {
  if (e.rule != i.rule->id) return false;
  if (!e.confidence.empty() && e.confidence != rules::ConfidenceName(i.confidence)) return false;
  if (e.occurrences >= 1 && e.occurrences != i.occurrences) return false;
  if (!e.closed.empty() && e.closed != correlate::CloseReasonName(i.closed)) return false;
  return e.affected < 0 || e.affected == i.affected;
}

}  // namespace

std::vector<RuleTestResult> RunRuleTests(std::shared_ptr<const rules::RuleSet> rules,
                                         int current_year) {
  std::vector<RuleTestResult> results;
  for (const rules::Rule& rule : rules->rules()) {
    for (const rules::RuleTest& test : rule.tests) {
      correlate::LatestIncidents collect;
      NullPipelineEvents events;
      parse::ParserOptions options;
      options.current_year = current_year;
      ReplayText(test.log, rule.id + "/test", "rule-test", options, rules, events, collect);
      std::vector<correlate::Incident> got = collect.Sorted();
      std::vector<bool> used(got.size(), false);
      std::vector<std::string> missing;
      for (const auto& e : test.expect) {
        bool found = false;
        for (size_t k = 0; k < got.size() && !found; ++k) {
          if (!used[k] && Matches(e, got[k])) used[k] = found = true;
        }
        if (!found) missing.push_back(Describe(e));
      }
      std::vector<std::string> unexpected;
      for (size_t k = 0; k < got.size(); ++k) {
        if (!used[k]) unexpected.push_back(Describe(got[k]));
      }
      RuleTestResult r{
          rule.id, test.name, rule.file, test.line, missing.empty() && unexpected.empty(), ""};
      std::ostringstream detail;
      for (const auto& m : missing) detail << "\n    missing:    " << m;
      for (const auto& u : unexpected) detail << "\n    unexpected: " << u;
      r.detail = detail.str();
      results.push_back(std::move(r));
    }
  }
  return results;
}

std::vector<std::string> LintRuleTests(const rules::RuleSet& rules) {
  std::vector<std::string> problems;
  for (const rules::Rule& rule : rules.rules()) {
    // A failure rule's positive test expects its incident; a ready rule's, an
    // incident closed as recovered (its line came after the failure).
    // A stop rule's, no incident at all (what followed the stop is no failure).
    // A start rule's, an incident of more than one occurrence (each start that
    // failed again is one).
    auto positive_expect = [&](const rules::RuleTest::Expected& e) {
      switch (rule.kind) {
        case rules::RuleKind::kReady:
          return e.closed == "recovered";
        case rules::RuleKind::kStart:
          return e.occurrences > 1;
        default:
          return e.rule == rule.id;
      }
    };
    int positive = 0;
    for (const rules::RuleTest& test : rule.tests) {
      const bool positive_test =
          rule.kind == rules::RuleKind::kStop
              ? test.expect.empty()
              : std::any_of(test.expect.begin(), test.expect.end(), positive_expect);
      if (positive_test) ++positive;
    }
    const char* positive_is =
        rule.kind == rules::RuleKind::kReady
            ? " positive test(s) (whose expect has closed: recovered)"
        : rule.kind == rules::RuleKind::kStop
            ? " positive test(s) (whose expect is empty: nothing after the stop is a failure)"
        : rule.kind == rules::RuleKind::kStart
            ? " positive test(s) (whose expect has occurrences above 1: each start that failed)"
            : " positive test(s) (whose expect names this rule)";
    const char* negative_is =
        rule.kind == rules::RuleKind::kReady   ? " negative test(s) (nothing recovered)"
        : rule.kind == rules::RuleKind::kStop  ? " negative test(s) (a failure still reported)"
        : rule.kind == rules::RuleKind::kStart ? " negative test(s) (one occurrence)"
                                               : " negative test(s) (whose expect omits this rule)";
    const int negative = static_cast<int>(rule.tests.size()) - positive;
    const std::string where = rule.file + ":" +
                              std::to_string(rule.tests.empty() ? 1 : rule.tests.front().line) +
                              ": rule " + rule.id + ": tests: ";
    if (positive < kMinPositiveRuleTests) {
      problems.push_back(where + std::to_string(positive) + positive_is + ", at least " +
                         std::to_string(kMinPositiveRuleTests) + " required");
    }
    if (negative < kMinNegativeRuleTests) {
      problems.push_back(where + std::to_string(negative) + negative_is + ", at least " +
                         std::to_string(kMinNegativeRuleTests) + " required");
    }
  }
  return problems;
}

}  // namespace fingerprintd::source
