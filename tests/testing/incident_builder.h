// An Incident of one rule of the embedded pack, for the tests of the sinks
// and the HTTP paths; each test sets the fields it is about.
#pragma once

#include <memory>
#include <string>

#include "fingerprintd/correlate.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {

inline correlate::Incident IncidentOfRule(const std::string& rule_id, const std::string& id,
                                          const std::string& deployment) {
  auto rules = EmbeddedRules();
  correlate::Incident incident;
  incident.incident_id = id;
  incident.rule = std::shared_ptr<const rules::Rule>(rules, rules->Find(rule_id));
  incident.severity = incident.rule->severity;
  incident.deployment = deployment;
  return incident;
}

}  // namespace fingerprintd::testing
