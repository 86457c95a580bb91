// The redaction step every incident takes before any output (the incident
// log, /incidents and the status page, Alertmanager, replay's output): the
// text an incident copied from the logs (evidence lines, the exception, the
// facts, the explanation that quotes them, the consequences' evidence, the
// signature) with its secrets masked (common/redact.h).
//
//   correlate::Incident shown = incident;
//   RedactIncident(*redactor, &shown, &counts);
//
// Threading: pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/redact.h"
#include "fingerprintd/correlate.h"

namespace fingerprintd::sink {

// Masks the secrets in `incident`'s text in place; adds what was masked, by
// kind, to *counts (optional). Returns how many were masked.
size_t RedactIncident(const Redactor& redactor, correlate::Incident* incident,
                      std::map<std::string, uint64_t>* counts = nullptr);

}  // namespace fingerprintd::sink
