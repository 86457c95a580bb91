// IncidentStore: the daemon's memory of open and recent incidents, for
// `GET /incidents` and the status page. An IncidentSink beside the JSONL log:
//
//   sink::IncidentStore store(events, 500, kDay);  // events: evictions counted
//   fanout.Add(&store);
//   for (const auto* e : store.Query({.deployment = "llama"})) ...IncidentToJson(e->incident)
//
// What it keeps: the latest revision of every open incident (the correlator
// caps how many are open), and the last max_recent_closed closed ones, dropped
// oldest-closed first and also once their last hit is older than
// max_closed_age before `now` in Prune(). Each drop is counted as
// Evicted::kIncidentHistory. It never re-reads the JSONL file: after a
// restart it shows what was decided since, plus the incidents the pipeline
// restored (reported again through Seed()).
//
// Threading: single-threaded (the daemon's io_context thread).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline_events.h"

namespace fingerprintd::sink {

struct StoredIncident {
  correlate::Incident incident;  // its latest revision
  bool open = true;              // false once closed (incident.closed says why)
};

struct IncidentQuery {
  std::string deployment;   // "" = every deployment
  int64_t since_us = 0;     // keep incidents whose last hit is at or after it; 0 = all
  std::string signature;    // "" = every failure; else one signature (correlate/signature.h)
  std::string incident_id;  // "" = every incident; else that one (the status page links it)
};

class IncidentStore final : public correlate::IncidentSink {
 public:
  // The daemon's limits come from its config (http.history_max_closed,
  // http.history_max_age; config.h has their defaults).
  IncidentStore(PipelineEvents& events, size_t max_recent_closed, int64_t max_closed_age_us);

  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override;

  // Forgets closed incidents whose last hit is older than max_closed_age
  // before now_us (wall time).
  void Prune(int64_t now_us);

  // New caps (a SIGHUP reload of http.history_*): closed incidents beyond
  // the new count are forgotten at once, oldest first; the new age applies
  // from the next Prune.
  void SetLimits(size_t max_recent_closed, int64_t max_closed_age_us);

  // Open incidents first, then closed ones; each group by last hit, newest
  // first. Pointers are valid until the next OnIncident or Prune.
  std::vector<const StoredIncident*> Query(const IncidentQuery& query) const;

  size_t open_count() const { return open_; }
  size_t size() const { return incidents_.size(); }

 private:
  void Forget(const std::string& id);
  void TrimClosed();  // the oldest closed incidents beyond max_recent_closed_

  PipelineEvents& events_;
  size_t max_recent_closed_;
  int64_t max_closed_age_us_;
  std::map<std::string, StoredIncident> incidents_;  // by incident id
  std::deque<std::string> closed_order_;             // ids, oldest close first
  size_t open_ = 0;
};

// The body of `GET /incidents`: a JSON array of the incident objects of
// DESIGN.md §6 (IncidentToJson), one per element, in Query() order.
std::string IncidentsToJsonArray(const std::vector<const StoredIncident*>& incidents);

}  // namespace fingerprintd::sink
