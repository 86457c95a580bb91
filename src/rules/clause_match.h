// Clause matching: whether a traceback's exception block is what a rule's
// `traceback` clause and `unless` vetoes describe (rules/README.md). Pure
// functions over the compiled rule; used by the rule engine.
#pragma once

#include <string_view>
#include <vector>

#include "fingerprintd/rules.h"
#include "fingerprintd/traceback.h"

namespace fingerprintd::rules {

bool MatchesFrame(const FramePattern& pattern, const Frame& frame);
// True if `patterns` occur in `frames` in order, gaps allowed.
bool MatchesFrameSequence(const std::vector<FramePattern>& patterns,
                          const std::vector<Frame>& frames);
// The clause's exception type and message. `rejoined`: the symptom's text when
// it was rejoined from a hard-wrapped message (the block's message is then its
// first piece only); else empty.
bool MatchesExceptionLine(const TracebackClause& clause, const ExceptionBlock& block,
                          std::string_view rejoined);
// The clause's `raised_in` holds for the block: no such pattern, or the
// block's raise site matches it (a block without frames has none: false).
bool RaisedInAllows(const TracebackClause& clause, const ExceptionBlock& block);
// The exception line, the frames in order and the raise site (a block without
// frames never matches a clause with `raised_in` whole).
bool MatchesClause(const TracebackClause& clause, const ExceptionBlock& block,
                   std::string_view rejoined);
// Any `unless` veto (frame, message or exception type) fires on the block.
bool Vetoed(const Rule& rule, const ExceptionBlock& block);
// Any `unless` message veto fires on `text` (a symptom without a traceback).
bool VetoedMessage(const Rule& rule, std::string_view text);

}  // namespace fingerprintd::rules
