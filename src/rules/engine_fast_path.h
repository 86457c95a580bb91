// RuleEngine::FastPath: how the pipeline's fast path (Pipeline::Feed) reaches
// into an engine. Only the pipeline and the engine's own tests use it; see
// fingerprintd/pipeline.h for the tier as a whole.
#pragma once

#include "fingerprintd/log_record.h"
#include "fingerprintd/rules.h"

namespace fingerprintd::rules {

struct RuleEngine::FastPath {
  // The parser vouched that a record of `worker` is an ordinary message at
  // INFO or below with a header (a prefix chain or a log header), holding
  // none of the rule set's atoms. Skips it when it would change nothing here
  // but end the line carried for a hard-wrapped message (a headered record
  // continues none): its stream was seen with the same rank and waits for no
  // traceback, and the rule set has no pattern that runs on every line. Then
  // this ends the carry, as the record would, and returns true; else it
  // changes nothing and returns false (the record is processed).
  static bool AbsorbQuietRecord(RuleEngine& engine, const WorkerInfo& worker);
};

}  // namespace fingerprintd::rules
