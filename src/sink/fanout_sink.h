// FanoutSink: where the daemon's incident changes go. Each change is
// redacted first (sink/redaction.h), logged on stderr, then handed to every
// sink in turn (the JSONL log, metrics, /incidents, Alertmanager); what a
// checkpoint resumed goes to the sinks that show what is open now.
//
//   FanoutSink fanout(metrics);
//   fanout.SetRedactor(redactor);
//   fanout.Add(jsonl, /*mirrors_open=*/false);
//   fanout.Add(&metrics);
//   Pipeline pipeline(rules, options, metrics, fanout);
//
// Threading: the daemon's io_context thread.
#pragma once

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/redact.h"
#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline.h"
#include "sink/metrics.h"
#include "sink/redaction.h"

namespace fingerprintd::sink {

// Masks the secrets of every incident change (sink/redaction.h), logs it on
// stderr and hands it to each sink in turn: nothing reaches an output
// unredacted, what a checkpoint resumed included.
class FanoutSink final : public correlate::IncidentSink {
 public:
  explicit FanoutSink(Metrics& metrics) : metrics_(metrics), mirrors_(*this) {}
  void SetRedactor(std::shared_ptr<const Redactor> redactor) { redactor_ = std::move(redactor); }
  // `mirrors_open`: the sink shows what is open now (metrics, /incidents,
  // Alertmanager), so it is told again what a checkpoint resumed; the JSONL
  // log is a history and already has those.
  void Add(correlate::IncidentSink* sink, bool mirrors_open = true) {
    sinks_.push_back(sink);
    if (mirrors_open) mirrors_.sinks_.push_back(sink);
  }
  void ReportRestored(const Pipeline& pipeline) { pipeline.ReportOpenIncidents(mirrors_); }
  void OnIncident(correlate::IncidentChange change, const correlate::Incident& given) override {
    const correlate::Incident incident = Redacted(given);
    spdlog::info(
        "incident {} {} rule={} deployment={} workers={}/{} occurrences={} revision={}{}{}",
        incident.incident_id, correlate::IncidentChangeName(change), incident.rule->id,
        incident.deployment, incident.affected, incident.expected, incident.occurrences,
        incident.revision, change == correlate::IncidentChange::kClosed ? " reason=" : "",
        change == correlate::IncidentChange::kClosed ? correlate::CloseReasonName(incident.closed)
                                                     : "");
    for (correlate::IncidentSink* sink : sinks_) sink->OnIncident(change, incident);
    changed = true;
  }
  bool changed = false;  // an incident was written since the last checkpoint

 private:
  struct Mirrors final : public correlate::IncidentSink {
    explicit Mirrors(FanoutSink& fanout) : fanout_(fanout) {}
    void OnIncident(correlate::IncidentChange change, const correlate::Incident& given) override {
      const correlate::Incident incident = fanout_.Redacted(given);
      for (correlate::IncidentSink* sink : sinks_) sink->OnIncident(change, incident);
    }
    FanoutSink& fanout_;
    std::vector<correlate::IncidentSink*> sinks_;
  };

  correlate::Incident Redacted(const correlate::Incident& given) {
    correlate::Incident incident = given;
    if (!redactor_) return incident;
    std::map<std::string, uint64_t> counts;
    RedactIncident(*redactor_, &incident, &counts);
    for (const auto& [kind, count] : counts) metrics_.Redacted(kind, count);
    return incident;
  }

  Metrics& metrics_;
  std::shared_ptr<const Redactor> redactor_;
  std::vector<correlate::IncidentSink*> sinks_;
  Mirrors mirrors_;
};

}  // namespace fingerprintd::sink
