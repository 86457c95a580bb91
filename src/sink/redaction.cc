// RedactIncident: see redaction.h.
#include "sink/redaction.h"

namespace fingerprintd::sink {

size_t RedactIncident(const Redactor& redactor, correlate::Incident* incident,
                      std::map<std::string, uint64_t>* counts) {
  size_t masked = 0;
  auto redact = [&](std::string* text) { masked += redactor.Redact(text, counts); };
  for (correlate::IncidentEvidence& evidence : incident->evidence) redact(&evidence.text);
  for (auto& [key, value] : incident->facts) redact(&value);
  for (std::string& step : incident->remediation) redact(&step);
  for (correlate::IncidentConsequence& consequence : incident->consequences) {
    redact(&consequence.evidence.text);
  }
  redact(&incident->explanation);
  redact(&incident->exception);
  redact(&incident->signature);
  return masked;
}

}  // namespace fingerprintd::sink
