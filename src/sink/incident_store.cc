// IncidentStore: see incident_store.h.
#include "sink/incident_store.h"

#include <algorithm>

namespace fingerprintd::sink {

IncidentStore::IncidentStore(PipelineEvents& events, size_t max_recent_closed,
                             int64_t max_closed_age_us)
    : events_(events),
      max_recent_closed_(max_recent_closed),
      max_closed_age_us_(max_closed_age_us) {}

void IncidentStore::SetLimits(size_t max_recent_closed, int64_t max_closed_age_us) {
  max_recent_closed_ = max_recent_closed;
  max_closed_age_us_ = max_closed_age_us;
  TrimClosed();
}

void IncidentStore::TrimClosed() {
  while (closed_order_.size() > max_recent_closed_) {
    Forget(closed_order_.front());
    closed_order_.pop_front();
  }
}

void IncidentStore::OnIncident(correlate::IncidentChange change,
                               const correlate::Incident& incident) {
  auto [it, inserted] = incidents_.try_emplace(incident.incident_id);
  StoredIncident& stored = it->second;
  bool was_open = !inserted && stored.open;
  stored.incident = incident;
  stored.open = change != correlate::IncidentChange::kClosed;
  if (stored.open && !was_open) ++open_;
  if (!stored.open && was_open) --open_;
  if (!stored.open && (was_open || inserted)) {
    closed_order_.push_back(incident.incident_id);
    TrimClosed();
  }
}

void IncidentStore::Forget(const std::string& id) {
  auto it = incidents_.find(id);
  if (it == incidents_.end() || it->second.open) return;  // reopened ids are new incidents
  incidents_.erase(it);
  events_.StateEvicted(Evicted::kIncidentHistory);
}

void IncidentStore::Prune(int64_t now_us) {
  while (!closed_order_.empty()) {
    auto it = incidents_.find(closed_order_.front());
    if (it != incidents_.end() && !it->second.open &&
        now_us - it->second.incident.last_seen_us <= max_closed_age_us_) {
      break;
    }
    Forget(closed_order_.front());
    closed_order_.pop_front();
  }
}

std::vector<const StoredIncident*> IncidentStore::Query(const IncidentQuery& query) const {
  std::vector<const StoredIncident*> out;
  for (const auto& [id, stored] : incidents_) {
    if (!query.deployment.empty() && stored.incident.deployment != query.deployment) continue;
    if (stored.incident.last_seen_us < query.since_us) continue;
    if (!query.signature.empty() && stored.incident.signature != query.signature) continue;
    if (!query.incident_id.empty() && stored.incident.incident_id != query.incident_id) continue;
    out.push_back(&stored);
  }
  std::sort(out.begin(), out.end(), [](const StoredIncident* a, const StoredIncident* b) {
    if (a->open != b->open) return a->open;
    if (a->incident.last_seen_us != b->incident.last_seen_us) {
      return a->incident.last_seen_us > b->incident.last_seen_us;
    }
    return a->incident.incident_id < b->incident.incident_id;
  });
  return out;
}

std::string IncidentsToJsonArray(const std::vector<const StoredIncident*>& incidents) {
  std::string out = "[";
  for (size_t i = 0; i < incidents.size(); ++i) {
    if (i) out += ",\n";
    out += correlate::IncidentToJson(incidents[i]->incident);
  }
  out += "]\n";
  return out;
}

}  // namespace fingerprintd::sink
