// RuleSet compilation and the literal prefilter.
//
// Every stage pattern and fact pattern of the pack is added to a FilteredRE2:
// one for the patterns asked about every message, one for the patterns of
// ERROR and CRITICAL stages, asked about a text only at those levels. Their
// atoms (lowercased literals every match must contain) are found in a line
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

namespace {

// One FilteredRE2 with its first pass: the atoms of its patterns found by a
// LiteralScanner, or by an RE2::Set when some atom is not ASCII.
struct Tier {
  // Atoms shorter than 6 bytes are dropped: short ones (" for ", "rank ",
  // "embed") occur in most request-log lines and only send them down the
  // slower second pass. 6 was the fastest on bench/ (4, 5, 7, 8, 10 measured)
  // with every pattern still behind a literal.
  re2::FilteredRE2 filter{6};
  LiteralScanner scanner;
  std::unique_ptr<AtomSet> atom_set;  // only when some atom is not ASCII
  // The atoms as the scanner searches them (ASCII, case-folded); empty when
  // the RE2::Set is used instead.
  std::vector<std::string> scanned_atoms;
  // Patterns FilteredRE2 could not reduce to atoms (local ids): candidates on
  // every text the tier is asked about.
  std::vector<int> unfiltered;
  std::vector<int> ids;  // local id -> the RuleSet's pattern id

  Status Add(const std::string& pattern, int id) {
    int local = -1;
    if (filter.Add(pattern, BoundedRe2Options(), &local) != RE2::NoError) {
      return InvalidArgumentError("cannot compile pattern: " + pattern);
    }
    if (static_cast<size_t>(local) != ids.size()) return InternalError("prefilter id mismatch");
    ids.push_back(id);
    return OkStatus();
  }

  Status Compile() {
    if (ids.empty()) return OkStatus();  // FilteredRE2 compiles nothing only with a warning
    std::vector<std::string> atoms;
    filter.Compile(&atoms);
    const bool ascii = std::all_of(atoms.begin(), atoms.end(), [](const std::string& atom) {
      return std::all_of(atom.begin(), atom.end(),
                         [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    });
    if (ascii) {
      scanner = LiteralScanner(atoms);
      scanned_atoms = std::move(atoms);
    } else {
      auto set = AtomSet::Compile(atoms, kRe2MaxMem);
      if (!set.ok()) return set.status();
      atom_set = std::move(*set);
    }
    filter.AllPotentials({}, &unfiltered);
    return OkStatus();
  }

  // Appends the ids of the patterns matching `text`. `atom_free`: the text
  // is known to hold none of this tier's atoms.
  void Match(std::string_view text, bool atom_free, RuleSet::MatchScratch* scratch,
             std::vector<int>* out) const {
    if (ids.empty()) return;
    bool any_atom = false;
    if (!atom_free) {
      any_atom =
          atom_set ? atom_set->Find(text, &scratch->atoms) : scanner.FindAll(text, &scratch->atoms);
    }
    if (!any_atom) {
      for (int local : unfiltered) {
        if (RE2::PartialMatch(text, filter.GetRE2(local))) out->push_back(ids[local]);
      }
      return;
    }
    filter.AllMatches(text, scratch->atoms, &scratch->local);
    for (int local : scratch->local) out->push_back(ids[local]);
  }
};

}  // namespace

struct RuleSet::Prefilter {
  // Stage patterns of stages below ERROR, and fact patterns: asked about
  // every message. Their atoms are the whole-buffer search's (Atoms()).
  Tier every_line;
  // Stage patterns of ERROR and CRITICAL stages: asked about a text only
  // when it could reach such a stage (Match's `level`), as the rare error
  // lines and the unleveled tail lines can. Not in Atoms(): the buffer
  // search and the quiet-line skip do not pay for their literals.
  Tier error_stages;
  struct Where {
    const Tier* tier;
    int local;
  };
  std::vector<Where> where;  // pattern id -> its tier and local id
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

const re2::RE2& RuleSet::Pattern(int id) const {
  const Prefilter::Where& w = prefilter_->where[id];
  return w.tier->filter.GetRE2(w.local);
}

Status RuleSet::Compile() {
  auto add = [&](const std::string& pattern, PatternRef ref, Tier* tier) -> Status {
    const int id = static_cast<int>(refs_.size());
    const int local = static_cast<int>(tier->ids.size());
    if (Status st = tier->Add(pattern, id); !st.ok()) return st;
    refs_.push_back(ref);
    prefilter_->where.push_back({tier, local});
    return OkStatus();
  };
  for (uint32_t r = 0; r < rules_.size(); ++r) {
    for (uint32_t s = 0; s < rules_[r].stages.size(); ++s) {
      Tier* tier = rules_[r].stages[s].level >= kErrorStageLevel ? &prefilter_->error_stages
                                                                 : &prefilter_->every_line;
      for (const std::string& p : rules_[r].stages[s].patterns) {
        if (Status st = add(p, {PatternRef::kStage, r, s}, tier); !st.ok()) return st;
      }
    }
  }
  for (uint32_t f = 0; f < facts_.size(); ++f) {
    for (const std::string& p : facts_[f].patterns) {
      if (Status st = add(p, {PatternRef::kFact, f, 0}, &prefilter_->every_line); !st.ok()) {
        return st;
      }
    }
  }
  if (Status st = prefilter_->every_line.Compile(); !st.ok()) return st;
  return prefilter_->error_stages.Compile();
}

// The hot path. Most lines contain no atom: one scan that allocates nothing,
// then the few unfiltered patterns. Lines with atoms go through FilteredRE2,
// which runs only the patterns whose required atoms all occurred. The
// error-stage tier runs only for a text at ERROR or above.
void RuleSet::Match(std::string_view text, Level level, MatchScratch* scratch,
                    std::vector<int>* out) const {
  Collect(text, level, /*atom_free=*/false, scratch, out);
}

void RuleSet::MatchAtomFree(std::string_view text, Level level, MatchScratch* scratch,
                            std::vector<int>* out) const {
  Collect(text, level, /*atom_free=*/true, scratch, out);
}

void RuleSet::Collect(std::string_view text, Level level, bool atom_free, MatchScratch* scratch,
                      std::vector<int>* out) const {
  out->clear();
  prefilter_->every_line.Match(text, atom_free, scratch, out);
  if (level < kErrorStageLevel) return;
  const size_t before = out->size();
  prefilter_->error_stages.Match(text, /*atom_free=*/false, scratch, out);
  // One order whatever the tiers: ascending pattern ids.
  if (before != 0 && out->size() != before) std::sort(out->begin(), out->end());
}

const std::vector<std::string>& RuleSet::Atoms() const {
  return prefilter_->every_line.scanned_atoms;
}

size_t RuleSet::UnfilteredPatternCount() const { return prefilter_->every_line.unfiltered.size(); }

}  // namespace fingerprintd::rules
