#include "rules/clause_match.h"

#include <re2/re2.h>

namespace fingerprintd::rules {

bool MatchesFrame(const FramePattern& pattern, const Frame& frame) {
  if (pattern.file && !RE2::PartialMatch(frame.file, *pattern.file)) return false;
  if (pattern.function && !RE2::PartialMatch(frame.function, *pattern.function)) return false;
  return true;
}

// True if `patterns` occur in `frames` in order, gaps allowed.
bool MatchesFrameSequence(const std::vector<FramePattern>& patterns,
                          const std::vector<Frame>& frames) {
  size_t next = 0;
  for (const Frame& frame : frames) {
    if (next == patterns.size()) break;
    if (MatchesFrame(patterns[next], frame)) ++next;
  }
  return next == patterns.size();
}

// `rejoined`: the symptom's text when it was rejoined from a hard-wrapped
// message (the block's message is then its first piece only); else empty.
bool MatchesExceptionLine(const TracebackClause& clause, const ExceptionBlock& block,
                          std::string_view rejoined) {
  if (block.type.empty() || !RE2::PartialMatch(block.type, *clause.exception)) return false;
  return !clause.message || RE2::PartialMatch(block.message, *clause.message) ||
         (!rejoined.empty() && RE2::PartialMatch(rejoined, *clause.message));
}

bool RaisedInAllows(const TracebackClause& clause, const ExceptionBlock& block) {
  if (!clause.raised_in) return true;
  const Frame* site = block.RaiseSite();
  return site != nullptr && MatchesFrame(*clause.raised_in, *site);
}

bool MatchesClause(const TracebackClause& clause, const ExceptionBlock& block,
                   std::string_view rejoined) {
  return MatchesExceptionLine(clause, block, rejoined) &&
         MatchesFrameSequence(clause.frames, block.frames) && RaisedInAllows(clause, block);
}

bool Vetoed(const Rule& rule, const ExceptionBlock& block) {
  for (const Veto& veto : rule.unless) {
    if (veto.message && RE2::PartialMatch(block.message, *veto.message)) return true;
    if (veto.exception && RE2::PartialMatch(block.type, *veto.exception)) return true;
    if (veto.frame) {
      for (const Frame& frame : block.frames) {
        if (MatchesFrame(*veto.frame, frame)) return true;
      }
    }
  }
  return false;
}

bool VetoedMessage(const Rule& rule, std::string_view text) {
  for (const Veto& veto : rule.unless) {
    if (veto.message && RE2::PartialMatch(text, *veto.message)) return true;
  }
  return false;
}

}  // namespace fingerprintd::rules
