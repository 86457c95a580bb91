// Expands a rule's `explanation` template into the sentence an incident
// carries: why this class, with the evidence (workers, identical tracebacks,
// the device capability against the kernel library's implemented list).
#pragma once

#include <map>
#include <string>

#include "fingerprintd/correlate.h"

namespace fingerprintd::correlate {

// Placeholders: {workers}, {capability}, {fact.NAME}, {decided_by} (the root
// exception's type and where it was raised). Unknown ones are kept.
std::string ExpandExplanation(const rules::Rule& rule, const rules::RuleSet& rules,
                              const Incident& incident,
                              const std::map<std::string, std::string>& facts,
                              bool tensor_parallel_known);

}  // namespace fingerprintd::correlate
