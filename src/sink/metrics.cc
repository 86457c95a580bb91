// Metrics: see metrics.h for the families and their sources.
#include "sink/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <utility>

#include "common/redact.h"
#include "fingerprintd/rules.h"

namespace fingerprintd::sink {

namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

constexpr char kOther[] = "_other";

}  // namespace

Metrics::Metrics(std::string_view version)
    : registry_(std::make_shared<prometheus::Registry>()),
      incidents_(BuildCounter()
                     .Name("fingerprintd_incidents_total")
                     .Help("Incidents opened, by rule, class and severity")
                     .Register(*registry_)),
      occurrences_total_(
          BuildCounter()
              .Name("fingerprintd_incident_occurrences_total")
              .Help("Occurrences of open incidents after their first (a crash loop's restarts), "
                    "by rule, class and severity")
              .Register(*registry_)),
      incidents_closed_(BuildCounter()
                            .Name("fingerprintd_incidents_closed_total")
                            .Help("Incidents closed, by reason (recovered, gone, expired, evicted)")
                            .Register(*registry_)),
      worker_failures_(
          BuildGauge()
              .Name("fingerprintd_worker_failures")
              .Help("1 while the rank is in an open incident of the rule (with its severity)")
              .Register(*registry_)),
      expected_workers_(BuildGauge()
                            .Name("fingerprintd_incident_expected_workers")
                            .Help("Expected workers of the open incident of the rule")
                            .Register(*registry_)),
      signature_deployments_(
          BuildGauge()
              .Name("fingerprintd_signature_deployments")
              .Help("Deployments with an open incident of the failure signature (one failure "
                    "seen in many places), by signature and class")
              .Register(*registry_)),
      sources_open_(BuildGauge()
                        .Name("fingerprintd_sources_open")
                        .Help("Streams being read now (tailed files, socket streams), by type")
                        .Register(*registry_)),
      http_requests_(BuildCounter()
                         .Name("fingerprintd_http_requests_total")
                         .Help("HTTP requests answered, and connections turned away, by outcome")
                         .Register(*registry_)),
      rule_matches_(BuildCounter()
                        .Name("fingerprintd_rule_matches_total")
                        .Help("Rule stage matches, by rule and stage")
                        .Register(*registry_)),
      hits_after_stop_(BuildCounter()
                           .Name("fingerprintd_hits_after_stop_total")
                           .Help("Findings that followed an operator's stop within its window "
                                 "(what the stop provoked: no incident), by rule")
                           .Register(*registry_)),
      lines_total_(BuildCounter()
                       .Name("fingerprintd_lines_total")
                       .Help("Lines read, by source")
                       .Register(*registry_)),
      bytes_total_(BuildCounter()
                       .Name("fingerprintd_bytes_total")
                       .Help("Bytes read (with the newline), by source")
                       .Register(*registry_)),
      lines_reread_total_(BuildCounter()
                              .Name("fingerprintd_lines_reread_total")
                              .Help("Lines read again after a restart or a reload (counted once "
                                    "in fingerprintd_lines_total already), by source")
                              .Register(*registry_)),
      source_lag_(BuildGauge()
                      .Name("fingerprintd_source_lag_bytes")
                      .Help("Bytes of a tailed file on disk not read yet (its size less the "
                            "position read), by source")
                      .Register(*registry_)),
      dropped_(BuildCounter()
                   .Name("fingerprintd_lines_dropped_total")
                   .Help("Lines (or parts of lines) not processed as they were, by reason")
                   .Register(*registry_)),
      time_guessed_(BuildCounter()
                        .Name("fingerprintd_time_guessed_total")
                        .Help("Event times completed by a fallback (no year, no timestamp)")
                        .Register(*registry_)),
      evictions_(BuildCounter()
                     .Name("fingerprintd_evictions_total")
                     .Help("State forgotten at a cap, by what")
                     .Register(*registry_)),
      label_overflow_(BuildCounter()
                          .Name("fingerprintd_label_overflow_total")
                          .Help("Label values counted under _other past the cap, by label")
                          .Register(*registry_)),
      rotations_(BuildCounter()
                     .Name("fingerprintd_rotations_total")
                     .Help("Tailed files rotated (rename+create, kubelet, symlink swap)")
                     .Register(*registry_)
                     .Add({})),
      truncations_(BuildCounter()
                       .Name("fingerprintd_truncations_total")
                       .Help("Tailed files truncated (copytruncate)")
                       .Register(*registry_)
                       .Add({})),
      checkpoint_age_(BuildGauge()
                          .Name("fingerprintd_checkpoint_age_seconds")
                          .Help("Seconds since the last committed checkpoint (0: none yet)")
                          .Register(*registry_)
                          .Add({})),
      rules_loaded_(BuildGauge()
                        .Name("fingerprintd_rules_loaded")
                        .Help("Rules in the running pack")
                        .Register(*registry_)
                        .Add({})),
      reload_failures_(BuildCounter()
                           .Name("fingerprintd_rule_reload_failures_total")
                           .Help("SIGHUP reloads that failed (the old config and rules kept)")
                           .Register(*registry_)
                           .Add({})),
      checkpoint_failures_(BuildCounter()
                               .Name("fingerprintd_checkpoint_failures_total")
                               .Help("Checkpoints that could not be written (the last one kept)")
                               .Register(*registry_)
                               .Add({})),
      released_bytes_(BuildCounter()
                          .Name("fingerprintd_released_bytes_total")
                          .Help("Bytes of tailed files read, checkpointed and released from "
                                "disk (release_read_bytes)")
                          .Register(*registry_)
                          .Add({})),
      release_failures_(BuildCounter()
                            .Name("fingerprintd_release_failures_total")
                            .Help("Tailed files whose read bytes could not be released (file "
                                  "system without hole punching, file not writable)")
                            .Register(*registry_)
                            .Add({})),
      release_over_bound_(BuildCounter()
                              .Name("fingerprintd_release_over_bound_total")
                              .Help("Releases after which a file still held more than its "
                                    "max_retained_bytes on disk (written faster than read)")
                              .Register(*registry_)
                              .Add({})),
      retained_bytes_evicted_(evictions_.Add({{"what", "retained_bytes"}})),
      restart_reread_bytes_(BuildCounter()
                                .Name("fingerprintd_restart_reread_bytes_total")
                                .Help("Bytes a restore from a checkpoint (a restart, a SIGHUP "
                                      "reload) left to read again")
                                .Register(*registry_)
                                .Add({})),
      internal_errors_(BuildCounter()
                           .Name("fingerprintd_internal_errors_total")
                           .Help("Exceptions an event handler let out: logged, dropped, the "
                                 "daemon runs on")
                           .Register(*registry_)
                           .Add({})),
      incident_log_write_errors_(BuildCounter()
                                     .Name("fingerprintd_incident_log_write_errors_total")
                                     .Help("Incident records the JSONL log could not take "
                                           "(kept and written again)")
                                     .Register(*registry_)
                                     .Add({})),
      incident_log_pending_(BuildGauge()
                                .Name("fingerprintd_incident_log_pending")
                                .Help("Incident records waiting to be written to the JSONL log")
                                .Register(*registry_)
                                .Add({})),
      accept_failures_(BuildCounter()
                           .Name("fingerprintd_accept_failures_total")
                           .Help("Connections a listener could not accept, by reason "
                                 "(descriptors: out of file descriptors, it backs off)")
                           .Register(*registry_)),
      checkpoint_corrupt_(BuildCounter()
                              .Name("fingerprintd_checkpoint_corrupt_total")
                              .Help("Checkpoints that did not decode, moved aside; files read "
                                    "per ignore_older")
                              .Register(*registry_)
                              .Add({})),
      redactions_(BuildCounter()
                      .Name("fingerprintd_redactions_total")
                      .Help("Secret values masked before any output, by kind")
                      .Register(*registry_)) {
  for (const char* reason : {"descriptors", "other"}) accept_failures_.Add({{"reason", reason}});
  for (const RedactionPattern& pattern : Redactor::Defaults()) {
    redactions_.Add({{"kind", pattern.kind}});
  }
  BuildGauge()
      .Name("fingerprintd_build_info")
      .Help("Build information; always 1")
      .Register(*registry_)
      .Add({{"version", std::string(version)}})
      .Set(1);
  // Every reason and what exists from the start, so rate() sees a 0 first.
  for (int r = 0; r < static_cast<int>(DropReason::kCount); ++r) {
    dropped_.Add({{"reason", std::string(DropReasonName(static_cast<DropReason>(r)))}});
  }
  for (int w = 0; w < static_cast<int>(Evicted::kCount); ++w) {
    evictions_.Add({{"what", std::string(EvictedName(static_cast<Evicted>(w)))}});
  }
  for (const char* label : {"source", "deployment"}) label_overflow_.Add({{"label", label}});
  source_errors_ = &BuildCounter()
                        .Name("fingerprintd_source_errors_total")
                        .Help(
                            "Attempts to read a tailed source that failed, by reason (every "
                            "retry counts; the log names the path once)")
                        .Register(*registry_);
  for (const char* reason : {"no_match", "directory_missing", "not_a_directory",
                             "permission_denied", "open_failed", "read_error"}) {
    source_errors_->Add({{"reason", reason}});
  }
  globs_matched_ = &BuildGauge()
                        .Name("fingerprintd_source_globs_matched")
                        .Help("Files each glob of a file source matched at its last scan")
                        .Register(*registry_);
  files_opened_ = &BuildCounter()
                       .Name("fingerprintd_files_opened_total")
                       .Help("Tailed files opened, by where reading started")
                       .Register(*registry_);
  for (const char* start : {"checkpoint", "beginning", "end", "born_while_stopped"}) {
    files_opened_->Add({{"start", start}});
  }
  for (const char* reason : {"truncated_unread", "deleted_unread"}) {
    dropped_.Add({{"reason", reason}});
  }
}

Metrics::~Metrics() = default;

std::string Metrics::Bounded(std::set<std::string>& seen, const std::string& value,
                             const char* label) {
  if (seen.count(value)) return value;
  if (seen.size() >= kMaxLabelValues) {
    label_overflow_.Add({{"label", label}}).Increment();
    return kOther;
  }
  seen.insert(value);
  return value;
}

std::pair<const std::string, Metrics::SourceCounters>& Metrics::ForSource(std::string_view source) {
  // Lines come in runs from one source: the last one found is compared first.
  if (last_source_ != nullptr && last_source_name_ == source) return *last_source_;
  auto& found = FindSource(source);
  last_source_ = &found;
  last_source_name_.assign(source);
  return found;
}

std::pair<const std::string, Metrics::SourceCounters>& Metrics::FindSource(
    std::string_view source) {
  if (auto it = sources_.find(source); it != sources_.end()) return *it;
  std::string label(source);
  if (sources_.size() >= kMaxLabelValues) {
    label_overflow_.Add({{"label", "source"}}).Increment();
    label = kOther;
    if (auto it = sources_.find(label); it != sources_.end()) return *it;
  }
  SourceCounters counters{&lines_total_.Add({{"source", label}}),
                          &bytes_total_.Add({{"source", label}}),
                          &lines_reread_total_.Add({{"source", label}})};
  return *sources_.emplace(label, counters).first;
}

void Metrics::LineRead(std::string_view source, uint64_t bytes) {
  SourceCounters& c = ForSource(source).second;
  ++c.unpublished_lines;
  c.unpublished_bytes += bytes;
  ++lines_;
  bytes_ += bytes;
}

void Metrics::LineReread(std::string_view source, uint64_t /*bytes*/) {
  ForSource(source).second.reread->Increment();
  ++lines_reread_;
}

void Metrics::RereadAtRestore(std::string_view source, uint64_t bytes) {
  if (bytes == 0) return;
  restart_reread_bytes_.Increment(static_cast<double>(bytes));
  restore_rereads_.emplace_back(std::string(source), bytes);
}

std::vector<std::pair<std::string, uint64_t>> Metrics::TakeRestoreRereads() {
  return std::exchange(restore_rereads_, {});
}

prometheus::Counter& Metrics::SeriesOf(prometheus::Family<prometheus::Counter>& family,
                                       prometheus::Counter*& kept, const char* label,
                                       std::string_view value) {
  if (kept == nullptr) kept = &family.Add({{label, std::string(value)}});
  return *kept;
}

void Metrics::LineDropped(DropReason reason) {
  ++dropped_lines_;
  SeriesOf(dropped_, dropped_by_[static_cast<size_t>(reason)], "reason", DropReasonName(reason))
      .Increment();
}

void Metrics::TimeGuessed(TimeFallback fallback) {
  SeriesOf(time_guessed_, guessed_by_[static_cast<size_t>(fallback)], "fallback",
           TimeFallbackName(fallback))
      .Increment();
}

void Metrics::RuleMatched(std::string_view rule, std::string_view stage) {
  auto key = std::make_pair(std::string(rule), std::string(stage));
  auto it = matches_.find(key);
  if (it == matches_.end()) {
    it = matches_.emplace(key, &rule_matches_.Add({{"rule", key.first}, {"stage", key.second}}))
             .first;
  }
  it->second->Increment();
}

void Metrics::HitAfterStop(std::string_view rule) {
  hits_after_stop_.Add({{"rule", std::string(rule)}}).Increment();
}

void Metrics::IncidentOpened(std::string_view rule, std::string_view rule_class,
                             std::string_view severity) {
  incidents_
      .Add({{"rule", std::string(rule)},
            {"class", std::string(rule_class)},
            {"severity", std::string(severity)}})
      .Increment();
}

void Metrics::FileRotated() { rotations_.Increment(); }
void Metrics::FileTruncated() { truncations_.Increment(); }

void Metrics::StateEvicted(Evicted what) {
  SeriesOf(evictions_, evicted_by_[static_cast<size_t>(what)], "what", EvictedName(what))
      .Increment();
}

void Metrics::OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) {
  // Recurrences: the increase of `occurrences` over what this sink last saw
  // of the incident (the first sight, a restored incident too, counts none).
  if (change == correlate::IncidentChange::kClosed) {
    occurrences_.erase(incident.incident_id);
    incidents_closed_.Add({{"reason", std::string(correlate::CloseReasonName(incident.closed))}})
        .Increment();
  } else {
    int& seen = occurrences_[incident.incident_id];
    if (seen > 0 && incident.occurrences > seen) {
      occurrences_total_
          .Add({{"rule", incident.rule->id},
                {"class", incident.rule->rule_class},
                {"severity", std::string(SeverityOf(incident))}})
          .Increment(incident.occurrences - seen);
    }
    seen = std::max(seen, incident.occurrences);
  }
  // Drop what this incident held, then take what it holds now (nothing once
  // closed); a gauge is 1 while any open incident holds it.
  for (prometheus::Gauge* gauge : open_[incident.incident_id]) {
    if (--holders_[gauge] == 0) gauge->Set(0);
  }
  open_.erase(incident.incident_id);
  if (auto it = expected_.find(incident.incident_id); it != expected_.end()) {
    it->second->Set(0);
    expected_.erase(it);
  }
  // The signature's deployments: this incident's counted again while open.
  if (auto it = signature_of_.find(incident.incident_id); it != signature_of_.end()) {
    auto& [gauge, deployment] = it->second;
    std::map<std::string, int>& per = signature_seen_[gauge];
    if (--per[deployment] == 0) per.erase(deployment);
    gauge->Set(static_cast<double>(per.size()));
    signature_of_.erase(it);
  }
  if (change != correlate::IncidentChange::kClosed && !incident.signature.empty()) {
    prometheus::Gauge& gauge = signature_deployments_.Add(
        {{"signature", Bounded(signatures_, incident.signature, "signature")},
         {"class", incident.rule->rule_class}});
    std::map<std::string, int>& per = signature_seen_[&gauge];
    ++per[incident.deployment];
    gauge.Set(static_cast<double>(per.size()));
    signature_of_[incident.incident_id] = {&gauge, incident.deployment};
  }
  if (change != correlate::IncidentChange::kClosed) {
    std::string deployment = Bounded(deployments_, incident.deployment, "deployment");
    std::vector<std::string> ranks;
    for (int32_t rank : incident.ranks) ranks.push_back(std::to_string(rank));
    for (int i = 0; static_cast<int>(ranks.size()) < std::max(incident.affected, 1); ++i) {
      ranks.push_back("unknown-" + std::to_string(i));
    }
    prometheus::Gauge& expected =
        expected_workers_.Add({{"deployment", deployment}, {"rule", incident.rule->id}});
    expected.Set(incident.expected);
    expected_[incident.incident_id] = &expected;
    std::vector<prometheus::Gauge*>& held = open_[incident.incident_id];
    const std::string severity(SeverityOf(incident));
    for (const std::string& rank : ranks) {
      prometheus::Gauge& gauge = worker_failures_.Add({{"deployment", deployment},
                                                       {"rule", incident.rule->id},
                                                       {"class", incident.rule->rule_class},
                                                       {"severity", severity},
                                                       {"rank", rank}});
      if (holders_[&gauge]++ == 0) gauge.Set(1);
      held.push_back(&gauge);
    }
  }
}

void Metrics::SetRulesLoaded(size_t rules) { rules_loaded_.Set(static_cast<double>(rules)); }
void Metrics::RuleReloadFailed() { reload_failures_.Increment(); }
void Metrics::CheckpointSaved(int64_t now_us) { checkpoint_at_us_ = now_us; }
void Metrics::CheckpointFailed() { checkpoint_failures_.Increment(); }
void Metrics::BytesReleased(uint64_t bytes) {
  released_bytes_.Increment(static_cast<double>(bytes));
  released_ += bytes;
}
void Metrics::ReleaseFailed() { release_failures_.Increment(); }
void Metrics::ReleaseOverBound() { release_over_bound_.Increment(); }
void Metrics::RetainedBytesEvicted() { retained_bytes_evicted_.Increment(); }

void Metrics::InternalError() { internal_errors_.Increment(); }
void Metrics::AcceptFailed(std::string_view reason) {
  accept_failures_.Add({{"reason", std::string(reason)}}).Increment();
}
void Metrics::CheckpointCorrupt() { checkpoint_corrupt_.Increment(); }
void Metrics::Redacted(std::string_view kind, uint64_t count) {
  redactions_.Add({{"kind", std::string(kind)}}).Increment(static_cast<double>(count));
}

void Metrics::SourceError(std::string_view reason) {
  source_errors_->Add({{"reason", std::string(reason)}}).Increment();
}

void Metrics::SetGlobMatched(const std::string& glob, size_t files) {
  globs_matched_->Add({{"glob", glob}}).Set(static_cast<double>(files));
}

void Metrics::FileOpened(std::string_view start) {
  files_opened_->Add({{"start", std::string(start)}}).Increment();
}

void Metrics::BytesUnread(std::string_view reason) {
  ++dropped_lines_;
  dropped_.Add({{"reason", std::string(reason)}}).Increment();
}

void Metrics::SetSourcesOpen(std::string_view type, size_t open) {
  sources_open_.Add({{"type", std::string(type)}}).Set(static_cast<double>(open));
}

void Metrics::SetSourceLags(const std::vector<std::pair<std::string, uint64_t>>& lags) {
  // Label -> bytes: the sources that had a series first, so a new one cannot
  // take the place of one a dashboard already follows.
  std::map<std::string, double, std::less<>> next;
  size_t kept = 0;
  for (const auto& [source, bytes] : lags) {
    if (source != kOther && lags_.count(source)) {
      next[source] = static_cast<double>(bytes);
      ++kept;
    }
  }
  size_t room = kMaxLabelValues > kept ? kMaxLabelValues - kept : 0;
  for (const auto& [source, bytes] : lags) {
    if (next.count(source)) continue;
    if (room > 0 && source != kOther) {
      next[source] = static_cast<double>(bytes);
      --room;
    } else {
      next[kOther] += static_cast<double>(bytes);
    }
  }
  for (auto it = lags_.begin(); it != lags_.end();) {
    if (next.count(it->first)) {
      ++it;
      continue;
    }
    source_lag_.Remove(it->second);
    it = lags_.erase(it);
  }
  for (const auto& [label, bytes] : next) {
    auto it = lags_.find(label);
    if (it == lags_.end()) it = lags_.emplace(label, &source_lag_.Add({{"source", label}})).first;
    it->second->Set(bytes);
  }
}

namespace {

// Brings a counter up to a total kept elsewhere (counters only go up).
void SyncCounter(prometheus::Counter& counter, uint64_t total) {
  double delta = static_cast<double>(total) - counter.Value();
  if (delta > 0) counter.Increment(delta);
}

}  // namespace

void Metrics::SetHttpRequests(std::string_view outcome, uint64_t total) {
  SyncCounter(http_requests_.Add({{"outcome", std::string(outcome)}}), total);
}

void Metrics::SetIncidentLog(uint64_t write_errors, size_t pending) {
  SyncCounter(incident_log_write_errors_, write_errors);
  incident_log_pending_.Set(static_cast<double>(pending));
}

std::string Metrics::Serialize(int64_t now_us) {
  for (auto& [label, c] : sources_) {
    if (c.unpublished_lines == 0) continue;
    c.lines->Increment(static_cast<double>(std::exchange(c.unpublished_lines, 0)));
    c.bytes->Increment(static_cast<double>(std::exchange(c.unpublished_bytes, 0)));
  }
  checkpoint_age_.Set(checkpoint_at_us_ == 0
                          ? 0.0
                          : static_cast<double>(std::max<int64_t>(0, now_us - checkpoint_at_us_)) /
                                1e6);
  std::string text = prometheus::TextSerializer().Serialize(registry_->Collect());
  return text;
}

}  // namespace fingerprintd::sink
