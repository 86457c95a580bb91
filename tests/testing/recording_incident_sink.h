// An IncidentSink that keeps every change it is given, in order: what the
// lifetime tests read revisions, opens and closes from.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fingerprintd/correlate.h"

namespace fingerprintd::testing {

struct RecordingIncidentSink final : correlate::IncidentSink {
  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override {
    changes.emplace_back(change, incident);
  }
  // The latest state of each incident, by id.
  std::map<std::string, correlate::Incident> Latest() const {
    std::map<std::string, correlate::Incident> out;
    for (const auto& [change, incident] : changes) out[incident.incident_id] = incident;
    return out;
  }
  int Count(correlate::IncidentChange kind) const {
    int n = 0;
    for (const auto& [change, incident] : changes) n += change == kind;
    return n;
  }
  std::vector<std::pair<correlate::IncidentChange, correlate::Incident>> changes;
};

}  // namespace fingerprintd::testing
