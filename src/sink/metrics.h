// Metrics: the daemon's Prometheus families (DESIGN.md §6), fed through the
// two interfaces every stage already reports to, so no stage knows Prometheus:
//
//   sink::Metrics metrics(FINGERPRINTD_VERSION);
//   Pipeline pipeline(rules, options, /*events=*/metrics, /*sink=*/fanout);  // fanout -> metrics
//   metrics.SetRulesLoaded(rules->rules().size());
//   std::string body = metrics.Serialize(now_us);   // GET /metrics, text format 0.0.4
//
// As PipelineEvents it counts lines and bytes per source, each line of a source
// once: a line read again after a restart or a reload (LineReread) goes to
// fingerprintd_lines_reread_total{source} instead, and the bytes each restore
// left to read again to fingerprintd_restart_reread_bytes_total (no source
// label: it moves once per restore, and the daemon's log names each source;
// TakeRestoreRereads()). It also counts drops by reason, rule matches by rule
// and stage, incidents opened by rule/class/severity, rotations, truncations
// and evictions by what. As source::FileSourceEvents it counts what the file
// sources report (files opened, source errors, bytes unread or released, the
// files each glob matches). As an IncidentSink it keeps
// fingerprintd_worker_failures{deployment,rule,class,severity,rank} at 1 while
// that rank belongs to an open (opened or updated) incident and sets it back
// to 0 when the incident closes (or when the incident's severity changes: the
// series of the new one takes over), so Prometheus can sum it across sidecars
// and page with the incident's own severity (deploy/prometheus/alerts.yml) (a
// worker the logs never gave a rank counts as rank "unknown-N", N from 0, so
// the sum is still the number of failed workers); beside it
// fingerprintd_incident_expected_workers{deployment,rule} is the incident's
// expected worker count while it is open, so an alert can compare the two.
// The daemon reports the rest itself (rules loaded, reload failures,
// checkpoint times and failures, open sources, each tailed file's read lag
// (fingerprintd_source_lag_bytes{source}), bytes of tailed files released
// from disk and releases refused or over their bound, the HTTP server's
// counters: fingerprintd_http_requests_total{outcome}; tailed sources that
// cannot be read, the files each glob matches, where files were opened).
//
// Label values are bounded: sources and deployments beyond kMaxLabelValues
// distinct values are counted under "_other" (and in
// fingerprintd_label_overflow_total{label}); lag series beyond kMaxLabelValues
// at once are summed under "_other"; rule, stage, class, severity,
// reason and what come from the rule pack or from enums. No log text is ever
// a label value.
//
// Threading: the daemon's io_context thread calls everything (the HTTP server
// serialises on the same thread). Counters themselves are atomic.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/rules.h"
#include "source/file_source_events.h"

namespace fingerprintd::sink {

inline constexpr size_t kMaxLabelValues = 10'000;

// The severity every output gives an incident: the `severity` label of its
// metrics here and of its pushed alert (sink/alertmanager.h), so the Prometheus
// alerts, which take theirs from the metric, say the same: the incident's, its
// rule's raised by the consequences folded into it (correlate.h).
inline std::string_view SeverityOf(const correlate::Incident& incident) {
  return rules::SeverityName(incident.severity);
}

class Metrics final : public source::FileSourceEvents, public correlate::IncidentSink {
 public:
  explicit Metrics(std::string_view version);
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // PipelineEvents
  void LineRead(std::string_view source, uint64_t bytes) override;
  void LineDropped(DropReason reason) override;
  void TimeGuessed(TimeFallback fallback) override;
  void TracebackAssembled() override {}
  void RuleMatched(std::string_view rule, std::string_view stage) override;
  void HitAfterStop(std::string_view rule) override;
  void IncidentOpened(std::string_view rule, std::string_view rule_class,
                      std::string_view severity) override;
  void IncidentUpdated(std::string_view) override {}
  void FileRotated() override;
  void FileTruncated() override;
  void StateEvicted(Evicted what) override;
  void LineReread(std::string_view source, uint64_t bytes) override;
  void RereadAtRestore(std::string_view source, uint64_t bytes) override;

  // What RereadAtRestore() heard since the last call, for the daemon's log
  // after a restore: each source with bytes to read again (> 0), in order.
  std::vector<std::pair<std::string, uint64_t>> TakeRestoreRereads();

  // IncidentSink: fingerprintd_worker_failures.
  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override;

  // Set by the daemon.
  void SetRulesLoaded(size_t rules);
  void RuleReloadFailed();
  // A checkpoint was committed at wall time `now_us` (age 0 from then on).
  void CheckpointSaved(int64_t now_us);
  void CheckpointFailed();
  // release_read_bytes (source/release_policy.h): bytes of a tailed file
  // released from disk; a file that could not be (named in the log); a
  // release after which the file still held more than its bound; a release
  // that went past the pipeline's safe position to stay within the bound
  // (fingerprintd_evictions_total{what="retained_bytes"}).
  void BytesReleased(uint64_t bytes) override;
  void ReleaseFailed() override;
  void ReleaseOverBound() override;
  void RetainedBytesEvicted() override;
  // Streams being read now (tailed files, connections' streams), by source type.
  void SetSourcesOpen(std::string_view type, size_t open);
  // fingerprintd_source_lag_bytes{source}: the read lag of every tailed file
  // now (source::Tailer::Lags(): bytes on disk not read yet). Replaces the
  // last call's: a source missing from `lags` (its file closed, its stream
  // ended) loses its series. Sources past kMaxLabelValues series (those that
  // had one keep it) are summed under "_other".
  void SetSourceLags(const std::vector<std::pair<std::string, uint64_t>>& lags);
  // Tailed sources (source/file_source.h): an attempt to read a source that
  // failed (fingerprintd_source_errors_total{reason}, reasons of
  // source/source_health.h), the files each glob matched
  // (fingerprintd_source_globs_matched{glob}), a file opened where it starts
  // (fingerprintd_files_opened_total{start}: checkpoint, beginning, end,
  // born_while_stopped), and bytes written that could not be read (a run of
  // them counts 1 in fingerprintd_lines_dropped_total{reason}: truncated_unread,
  // deleted_unread; the log says how many bytes).
  void SourceError(std::string_view reason) override;
  void SetGlobMatched(const std::string& glob, size_t files) override;
  void FileOpened(std::string_view start) override;
  void BytesUnread(std::string_view reason) override;
  // fingerprintd_http_requests_total{outcome}: the HTTP server's count of one
  // outcome (answered, bad_request, refused, evicted_idle, evicted_slow,
  // timeout), copied
  // before a scrape (http::Api).
  void SetHttpRequests(std::string_view outcome, uint64_t total);

  // What the daemon lives through and says so (issue 42):
  // - InternalError: an exception a handler of the event loop let out, logged
  //   and dropped (fingerprintd_internal_errors_total);
  // - SetIncidentLog: failed writes of the incident log
  //   (fingerprintd_incident_log_write_errors_total, a total copied from the
  //   sink) and the records kept to be written again
  //   (fingerprintd_incident_log_pending);
  // - AcceptFailed: a connection a listener could not take, by reason
  //   ("descriptors": EMFILE/ENFILE, then it backs off; "other")
  //   (fingerprintd_accept_failures_total{reason});
  // - CheckpointCorrupt: a checkpoint that did not decode, moved aside
  //   (fingerprintd_checkpoint_corrupt_total);
  // - Redacted: values masked before any output, by kind
  //   (fingerprintd_redactions_total{kind}; common/redact.h).
  void InternalError();
  void SetIncidentLog(uint64_t write_errors, size_t pending);
  void AcceptFailed(std::string_view reason);
  void CheckpointCorrupt();
  void Redacted(std::string_view kind, uint64_t count);

  // Every family in the Prometheus text format; checkpoint age as of now_us.
  std::string Serialize(int64_t now_us);

  // Totals, for the daemon's own log line at exit.
  uint64_t lines() const { return lines_; }
  uint64_t lines_reread() const { return lines_reread_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t dropped() const { return dropped_lines_; }
  uint64_t rotations() const { return static_cast<uint64_t>(rotations_.Value()); }
  uint64_t truncations() const { return static_cast<uint64_t>(truncations_.Value()); }
  uint64_t released() const { return released_; }

 private:
  struct SourceCounters {
    prometheus::Counter* lines;
    prometheus::Counter* bytes;
    prometheus::Counter* reread = nullptr;  // at 0 from the start, so rate() sees a 0 first
    // Lines and bytes read since the last Serialize: added to the two
    // counters there, not at every line (an atomic add of a double each).
    uint64_t unpublished_lines = 0;
    uint64_t unpublished_bytes = 0;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // The source's entry: its label (the source, or "_other" past the cap) and counters.
  std::pair<const std::string, SourceCounters>& ForSource(std::string_view source);
  std::pair<const std::string, SourceCounters>& FindSource(std::string_view source);
  // `family`'s series {label="value"}, added the first time and kept in `kept`.
  static prometheus::Counter& SeriesOf(prometheus::Family<prometheus::Counter>& family,
                                       prometheus::Counter*& kept, const char* label,
                                       std::string_view value);
  // `value`, or "_other" once `seen` holds kMaxLabelValues others (counted).
  std::string Bounded(std::set<std::string>& seen, const std::string& value, const char* label);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& incidents_;
  prometheus::Family<prometheus::Counter>& occurrences_total_;
  prometheus::Family<prometheus::Counter>& incidents_closed_;
  prometheus::Family<prometheus::Gauge>& worker_failures_;
  prometheus::Family<prometheus::Gauge>& expected_workers_;
  prometheus::Family<prometheus::Gauge>& signature_deployments_;
  prometheus::Family<prometheus::Gauge>& sources_open_;
  prometheus::Family<prometheus::Counter>& http_requests_;
  prometheus::Family<prometheus::Counter>& rule_matches_;
  prometheus::Family<prometheus::Counter>& hits_after_stop_;
  prometheus::Family<prometheus::Counter>& lines_total_;
  prometheus::Family<prometheus::Counter>& bytes_total_;
  prometheus::Family<prometheus::Counter>& lines_reread_total_;
  prometheus::Family<prometheus::Gauge>& source_lag_;
  prometheus::Family<prometheus::Counter>& dropped_;
  prometheus::Family<prometheus::Counter>& time_guessed_;
  prometheus::Family<prometheus::Counter>& evictions_;
  prometheus::Family<prometheus::Counter>& label_overflow_;
  prometheus::Counter& rotations_;
  prometheus::Counter& truncations_;
  prometheus::Gauge& checkpoint_age_;
  prometheus::Gauge& rules_loaded_;
  prometheus::Counter& reload_failures_;
  prometheus::Counter& checkpoint_failures_;
  prometheus::Counter& released_bytes_;
  prometheus::Counter& release_failures_;
  prometheus::Counter& release_over_bound_;
  prometheus::Counter& retained_bytes_evicted_;
  prometheus::Counter& restart_reread_bytes_;
  prometheus::Counter& internal_errors_;
  prometheus::Counter& incident_log_write_errors_;
  prometheus::Gauge& incident_log_pending_;
  prometheus::Family<prometheus::Counter>& accept_failures_;
  prometheus::Counter& checkpoint_corrupt_;
  prometheus::Family<prometheus::Counter>& redactions_;

  prometheus::Family<prometheus::Counter>* source_errors_ = nullptr;
  prometheus::Family<prometheus::Gauge>* globs_matched_ = nullptr;
  prometheus::Family<prometheus::Counter>* files_opened_ = nullptr;

  std::unordered_map<std::string, SourceCounters, StringHash, std::equal_to<>> sources_;
  // ForSource's last answer (entries are never erased; their addresses hold).
  std::pair<const std::string, SourceCounters>* last_source_ = nullptr;
  std::string last_source_name_;
  // fingerprintd_source_lag_bytes series set by the last SetSourceLags, by label.
  std::map<std::string, prometheus::Gauge*, std::less<>> lags_;
  std::vector<std::pair<std::string, uint64_t>> restore_rereads_;  // until taken
  std::set<std::string> deployments_;
  std::set<std::string> signatures_;  // label values seen, bounded as deployments_
  // Per open incident, its signature's gauge and its deployment; per gauge,
  // its open incidents by deployment (the gauge is how many deployments).
  std::map<std::string, std::pair<prometheus::Gauge*, std::string>> signature_of_;
  std::map<prometheus::Gauge*, std::map<std::string, int>> signature_seen_;
  std::map<std::pair<std::string, std::string>, prometheus::Counter*> matches_;
  // The series of each reason, fallback and eviction, added at first use
  // (SeriesOf): these are counted per line, and Family::Add builds and hashes
  // a label map.
  std::array<prometheus::Counter*, static_cast<size_t>(DropReason::kCount)> dropped_by_{};
  std::array<prometheus::Counter*, static_cast<size_t>(TimeFallback::kCount)> guessed_by_{};
  std::array<prometheus::Counter*, static_cast<size_t>(Evicted::kCount)> evicted_by_{};
  // Ranks each incident holds at 1: (deployment, rule, class, severity, rank) labels.
  std::map<std::string, std::vector<prometheus::Gauge*>> open_;
  // fingerprintd_incident_expected_workers series each open incident sets, by id.
  std::map<std::string, prometheus::Gauge*> expected_;
  std::map<prometheus::Gauge*, int> holders_;  // open incidents holding each gauge at 1
  std::map<std::string, int> occurrences_;     // of each open incident, as last seen
  int64_t checkpoint_at_us_ = 0;
  uint64_t lines_ = 0, lines_reread_ = 0, bytes_ = 0, dropped_lines_ = 0, released_ = 0;
};

}  // namespace fingerprintd::sink
