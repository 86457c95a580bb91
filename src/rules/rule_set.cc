// RuleSet compilation and the literal prefilter.
//
// Every stage pattern and fact pattern of the pack is added to one FilteredRE2.
// Its atoms (lowercased literals every match must contain) are found in a line
// by one LiteralScanner pass (literal_scanner.h), and only the patterns whose
// atoms occurred are run as full RE2 programs. Patterns without usable atoms
// are candidates on every line. A case-insensitive RE2::Set of the atoms
// (AtomSet) replaces the scanner only when some atom has non-ASCII bytes,
// which the scanner does not case-fold.
//
// Memory: every pattern is compiled as the rule loader checked it
// (common/re2_limits.h: 1 MiB per RE2, programs and DFA caches, instead of
// RE2's 8 MiB); a pattern's DFA that fills at match time is reset, or RE2
// falls back to the NFA, never larger. The atom set gets the same budget,
// and a line on which it runs out of memory has its atoms searched one by
// one (atom_set.h), never taken for a line without atoms.
#include <re2/filtered_re2.h>
#include <re2/re2.h>

#include <algorithm>

#include "common/re2_limits.h"
#include "fingerprintd/rules.h"
#include "rules/atom_set.h"
#include "rules/literal_scanner.h"

namespace fingerprintd::rules {

std::string_view ConfidenceName(Confidence c) {
  return c == Confidence::kConfirmed ? "confirmed" : "partial";
}

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
    case Severity::kCritical:
      return "critical";
  }
  return "error";
}

bool ParseSeverity(std::string_view text, Severity* out) {
  static constexpr std::pair<std::string_view, Severity> kNames[] = {
      {"info", Severity::kInfo},
      {"warning", Severity::kWarning},
      {"error", Severity::kError},
      {"critical", Severity::kCritical}};
  for (const auto& [name, value] : kNames) {
    if (text == name) {
      *out = value;
      return true;
    }
  }
  return false;
}

bool IsValidRuleClass(std::string_view text) {
  static constexpr std::string_view kClasses[] = {"hardware_support", "model_bug", "resource",
                                                  "distributed",      "config",    "unknown"};
  return std::find(std::begin(kClasses), std::end(kClasses), text) != std::end(kClasses);
}

struct RuleSet::Prefilter {
  // Atoms shorter than 6 bytes are dropped: short ones (" for ", "rank ",
  // "embed") occur in most request-log lines and only send them down the
  // slower second pass. 6 was the fastest on bench/ (4, 5, 7, 8, 10 measured)
  // with every pattern still behind a literal.
  re2::FilteredRE2 filter{6};
  // The atoms are found by `scanner`; `atoms` (an RE2::Set) only when some
  // atom has non-ASCII bytes, which the scanner does not case-fold.
  LiteralScanner scanner;
  std::unique_ptr<AtomSet> atoms;
  // Patterns FilteredRE2 could not reduce to atoms: candidates on every line.
  std::vector<int> unfiltered;
  // The atoms as the scanner searches them (ASCII, case-folded); empty when
  // the RE2::Set is used instead.
  std::vector<std::string> scanned_atoms;
};

RuleSet::RuleSet() : prefilter_(std::make_unique<Prefilter>()) {}
RuleSet::~RuleSet() = default;

const Rule* RuleSet::Find(std::string_view id) const {
  for (const Rule& rule : rules_) {
    if (rule.id == id) return &rule;
  }
  return nullptr;
}

const KernelSupport* RuleSet::FindLibrary(std::string_view library) const {
  for (const KernelSupport& k : kernel_support_) {
    if (k.library == library) return &k;
  }
  return nullptr;
}

const re2::RE2& RuleSet::Pattern(int id) const { return prefilter_->filter.GetRE2(id); }

Status RuleSet::Compile() {
  const RE2::Options options = BoundedRe2Options();
  auto add = [&](const std::string& pattern, PatternRef ref) -> Status {
    int id = -1;
    if (prefilter_->filter.Add(pattern, options, &id) != RE2::NoError) {
      return InvalidArgumentError("cannot compile pattern: " + pattern);
    }
    if (static_cast<size_t>(id) != refs_.size()) return InternalError("prefilter id mismatch");
    refs_.push_back(ref);
    return OkStatus();
  };
  for (uint32_t r = 0; r < rules_.size(); ++r) {
    for (uint32_t s = 0; s < rules_[r].stages.size(); ++s) {
      for (const std::string& p : rules_[r].stages[s].patterns) {
        if (Status st = add(p, {PatternRef::kStage, r, s}); !st.ok()) return st;
      }
    }
  }
  for (uint32_t f = 0; f < facts_.size(); ++f) {
    for (const std::string& p : facts_[f].patterns) {
      if (Status st = add(p, {PatternRef::kFact, f, 0}); !st.ok()) return st;
    }
  }
  std::vector<std::string> atoms;
  prefilter_->filter.Compile(&atoms);
  bool ascii = std::all_of(atoms.begin(), atoms.end(), [](const std::string& atom) {
    return std::all_of(atom.begin(), atom.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  });
  if (ascii) {
    prefilter_->scanner = LiteralScanner(atoms);
    prefilter_->scanned_atoms = atoms;
  } else {
    auto set = AtomSet::Compile(atoms, kRe2MaxMem);
    if (!set.ok()) return set.status();
    prefilter_->atoms = std::move(*set);
  }
  prefilter_->filter.AllPotentials({}, &prefilter_->unfiltered);
  return OkStatus();
}

// The hot path. Most lines contain no atom: one scan that allocates nothing,
// then the few unfiltered patterns. Lines with atoms go through FilteredRE2,
// which runs only the patterns whose required atoms all occurred.
void RuleSet::Match(std::string_view text, std::vector<int>* atoms, std::vector<int>* out) const {
  out->clear();
  atoms->clear();
  bool any_atom;
  if (prefilter_->atoms) {
    any_atom = prefilter_->atoms->Find(text, atoms);
  } else {
    any_atom = prefilter_->scanner.FindAll(text, atoms);
  }
  if (!any_atom) {
    MatchAtomFree(text, out);
    return;
  }
  prefilter_->filter.AllMatches(text, *atoms, out);
}

void RuleSet::MatchAtomFree(std::string_view text, std::vector<int>* out) const {
  out->clear();
  for (int id : prefilter_->unfiltered) {
    if (RE2::PartialMatch(text, prefilter_->filter.GetRE2(id))) out->push_back(id);
  }
}

const std::vector<std::string>& RuleSet::Atoms() const { return prefilter_->scanned_atoms; }

size_t RuleSet::UnfilteredPatternCount() const { return prefilter_->unfiltered.size(); }

}  // namespace fingerprintd::rules
