// The correlate stage: groups rule hits of one deployment into incidents.
//
// Hits of one rule in one deployment while its incident is open are ONE
// incident; those within the rule's window (event time) are one attempt of
// it. Worker-role streams are the workers; engine-core and
// API-server copies of a worker's exception are evidence for that incident,
// never extra workers (a Ray re-raise names the actor's pid, which is mapped
// back to the worker). Expected workers = tensor x pipeline parallel size from
// the deployment facts, else the distinct worker streams seen.
//
// Lifetime (IncidentSink::OnIncident): an incident lasts as long as its
// failure. It is opened when every expected worker reported, when Advance()
// moves event time past its window, or at Finish(); a later hit updates it
// (same incident_id, revision + 1): a late worker, more evidence, or another
// occurrence — the same rule failing again in the same deployment more than a
// window after the current attempt's first symptom (a crash loop's next
// restart) is `occurrences` + 1 of the same incident, its workers and
// evidence then the new attempt's. It is closed, a revision of its own, only
// with a reason: kRecovered (a `kind: ready` rule's line in the deployment,
// after its failure), kGone (every source of the deployment forgotten for
// Options::gone_after_us), kExpired (no hit for Options::max_age_us), kEvicted
// (the open-incident cap). A failure of the same rule after a kRecovered close
// is a new incident naming the one it regressed from. The window only says
// which hits form one attempt and when a first revision is emitted without a
// missing worker. Finish() emits the last changes and leaves incidents open
// (replay's final state: still failing). Weaker
// incidents are held until their window closes and dropped unseen if a
// stronger one covers the same deployment and time: an incident made only of
// engine-core/API-server copies yields to one with worker hits, and a
// fallback rule (class unknown catch-all) yields to any other rule.
//
// Cause and consequences: in one attempt of a deployment, the earliest
// failure is the cause. A later finding of a `consequence: true` rule (what
// a failure provokes: other ranks' collective timeouts, dead workers, a dead
// engine) folds into the cause's incident as one of its `consequences` and
// raises its severity to its own; it is reported on its own only when no
// failure came before it in the attempt. A cause decided after its
// consequences were reported takes them in (the reported one closes as
// kFolded). An attempt ends where the deployment restarts: a `kind: start`
// rule's line (the engine's start banner), or a rank failing again from a
// new process; and, as before, a window's time.
//
// The incident id is a hash of the deployment, the rule and the earliest
// symptom time the log gave among the incident's hits when it is first
// reported (all expected workers in, or its window over; 0 when no symptom
// line had a time of its own, which live dates by its reading): the same
// whichever worker's hit arrived first, so replay, live input and a restart
// give one id. Hits still
// come through the Pipeline (fingerprintd/pipeline.h) in one canonical order,
// so that grouping does not depend on the pace of the sources either.

// Memory: an incident keeps a sample of its hits (the first few per worker)
// and counts the rest; a deployment remembers a bounded number of workers (a
// restarted rank replaces its old pid). Sources that will not report again
// are forgotten (ForgetSource): their ids go to later sources once no open
// incident refers to them, and a deployment left with no source and no open
// incident is forgotten with its facts and workers (Evicted::kDeployment),
// so pod churn (a new name per pod) does not grow the correlator.
//
// Threading: single-threaded. No wall clock: Advance() takes event time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fingerprintd/pipeline_events.h"
#include "fingerprintd/rules.h"
#include "fingerprintd/status.h"

namespace fingerprintd::correlate {

struct IncidentStage {
  std::string id;
  bool required = false;
  bool matched = false;
  std::vector<std::pair<std::string, uint64_t>> lines;  // (source, line) refs, capped
};

struct IncidentEvidence {
  std::string source;
  uint64_t line = 0;
  std::string text;
};

// Why an incident ended. An incident lasts as long as its failure: the
// correlation window only groups the hits of one attempt (an occurrence).
enum class CloseReason : uint8_t {
  kNone = 0,   // still open ("still failing" at the end of a replay)
  kRecovered,  // the deployment started healthy after it (a `kind: ready` rule's line)
  kGone,       // every source of the deployment was removed, for Options::gone_after_us
  kExpired,    // no new occurrence for Options::max_age_us
  kEvicted,    // the open-incident cap was hit; the oldest was closed early
  // It was reported before its cause was read (a cause decided late): it is
  // now a consequence inside that cause's incident (Incident::folded_into).
  kFolded,
};
std::string_view CloseReasonName(CloseReason reason);  // "open", "recovered", "gone", ...

// A failure another failure provoked: a `consequence: true` rule's finding
// (another rank's collective timeout, a worker or the engine reported dead,
// the server's own catch-all) after the first symptom of an earlier failure
// in the same attempt of the deployment. It is folded into that failure's
// incident, listed there, and never reported on its own.
struct IncidentConsequence {
  std::shared_ptr<const rules::Rule> rule;  // kept alive with its pack, as Incident::rule
  std::vector<int32_t> ranks;               // known global ranks, sorted
  std::vector<std::string> workers;         // process labels, sorted
  int64_t first_seen_us = 0;                // its earliest symptom time the log gave (0: none)
  IncidentEvidence evidence;  // its latest symptom line (where the last process said it)
};

struct Incident {
  std::string incident_id;
  // The rule, kept alive with the pack it came from (aliasing shared_ptr), so
  // an incident outlives a rule reload.
  std::shared_ptr<const rules::Rule> rule;
  std::string deployment;
  std::map<std::string, std::string> labels;  // static labels of the deployment's sources
  rules::Confidence confidence = rules::Confidence::kPartial;
  // The rule's severity, raised to the highest of its consequences': what
  // the cause provoked is part of how bad it is (one page, as loud as the
  // loudest of its effects).
  rules::Severity severity = rules::Severity::kInfo;
  int expected = 0;
  int affected = 0;
  std::vector<int32_t> ranks;        // known global ranks of affected workers, sorted
  std::vector<std::string> workers;  // labels of affected workers, sorted
  bool identical = false;            // two or more workers failed, all with one traceback
  int64_t first_seen_us = 0;
  int64_t last_seen_us = 0;
  std::vector<IncidentStage> stages;
  std::map<std::string, std::string> facts;
  std::vector<IncidentEvidence> evidence;  // capped
  std::string explanation;
  std::vector<std::string> remediation;
  std::string exception;              // root exception line of the first hit
  std::string raised_in;              // that hit's raise site, "module:function" ("" = none)
  std::string traceback_fingerprint;  // most common fingerprint over workers
  int revision = 0;                   // 1 when first emitted, +1 per update
  uint64_t hits = 0;                  // rule hits folded into it (evidence keeps a sample)
  // Attempts that failed this way while it was open (a crash loop's
  // restarts): hits more than a window after the current attempt's first
  // symptom start the next one. Workers, stages and evidence are the latest
  // attempt's.
  int occurrences = 1;
  CloseReason closed = CloseReason::kNone;
  int64_t closed_us = 0;       // event time of the close (the ready line's for kRecovered)
  std::string regressed_from;  // the incident of the same rule and deployment it follows
                               // after a kRecovered close within max_age; "" = none
  // What this failure provoked in the current attempt, by first seen time.
  std::vector<IncidentConsequence> consequences;
  std::string folded_into;  // CloseReason::kFolded: the cause's incident id
  // What the failure is wherever it happens (correlate/signature.h): the same
  // in every deployment, node and run; signature_version names the masking.
  std::string signature;
  int signature_version = 0;
};

// What happened to an incident. Every incident is opened once, updated any
// number of times (a later worker, more evidence, another occurrence;
// revision + 1 each time) and closed at most once with its reason (revision
// + 1); a closed incident is never reopened (a later failure is a new
// incident). An incident suppressed before it was ever
// opened (a catch-all or re-raise covered by a real fingerprint) is never seen.
enum class IncidentChange : uint8_t { kOpened = 0, kUpdated, kClosed };
std::string_view IncidentChangeName(IncidentChange change);  // "opened", "updated", "closed"

class IncidentSink {
 public:
  virtual ~IncidentSink() = default;
  // `incident.closed` is set on kClosed; `incident` is valid for the call only.
  virtual void OnIncident(IncidentChange change, const Incident& incident) = 0;
};

// Keeps the latest revision of every incident, for callers that report final
// states (replay, rule tests). Sorted(): by first-seen time, deployment, rule,
// id — a stable order for byte-identical output. Single-threaded.
class LatestIncidents final : public IncidentSink {
 public:
  void OnIncident(IncidentChange change, const Incident& incident) override;
  std::vector<Incident> Sorted() const;
  int emissions() const { return emissions_; }  // opened + updated calls

 private:
  std::map<std::string, Incident> latest_;
  int emissions_ = 0;
};

class Correlator final : public rules::HitSink {
 public:
  struct Options {
    size_t max_evidence = 24;            // evidence lines per incident
    size_t max_open_incidents = 10'000;  // beyond: the oldest is closed (evicted), counted
    // Worker processes remembered per deployment (ranks, expected counts);
    // beyond: the oldest is forgotten, counted as Evicted::kWorker.
    size_t max_known_workers = 4096;
    // When > 0, the correlation window of every rule (config `correlation.window`);
    // 0 keeps each rule's own `window`.
    int64_t window_us = 0;
    // An open incident of a deployment all of whose sources were removed
    // (ForgetSource) closes as gone this long after (config `incidents.gone_after`).
    int64_t gone_after_us = 10LL * 60 * 1'000'000;
    // An open incident with no new hit for this long closes as expired
    // (config `incidents.max_age`); 0 = never.
    int64_t max_age_us = 24LL * 3600 * 1'000'000;
  };
  Correlator(std::shared_ptr<const rules::RuleSet> rules, PipelineEvents& events,
             IncidentSink& sink);
  Correlator(std::shared_ptr<const rules::RuleSet> rules, PipelineEvents& events,
             IncidentSink& sink, Options options);
  ~Correlator() override;

  // Registers a source and the deployment it belongs to; returns its source
  // id. `labels` (static labels of the source, e.g. cluster=prod) are merged
  // into the deployment's and carried by its incidents.
  uint32_t AddSource(const std::string& name, const std::string& deployment,
                     const std::map<std::string, std::string>& labels = {});
  const std::string& SourceName(uint32_t source_id) const;
  // The source will not report again (its stream ended for good): hits,
  // facts and workers still arriving for it are ignored. Its id is given to
  // a later AddSource once no open incident's evidence names it; its
  // deployment is forgotten once it has no source and no open incident.
  void ForgetSource(uint32_t source_id);
  // Source ids not free for reuse (registered, or forgotten and still named
  // by an open incident), and deployments remembered: what SaveState holds.
  size_t source_count() const;
  size_t deployment_count() const;
  // Whether the deployment is remembered (it has a source or an open incident).
  bool RemembersDeployment(const std::string& deployment) const;

  void OnHit(rules::RuleHit hit) override;
  void OnFact(uint32_t source_id, const std::string& name, const std::string& value) override;
  void OnWorkerSeen(uint32_t source_id, const WorkerInfo& worker) override;
  void OnWorkerRank(uint32_t source_id, const WorkerInfo& worker) override;

  // At event time now_us: emits the changes of incidents whose attempt's
  // window ended, and closes those expired (max_age) or gone (gone_after).
  void Advance(int64_t now_us);
  // The same for the incidents of one deployment only (each deployment's
  // event clock is its own: the Pipeline's watermark).
  void AdvanceDeployment(const std::string& deployment, int64_t now_us);
  // The end of the input: emits the last change of every incident; they
  // stay open (replay reports them as still failing).
  void Finish();
  // Hands every incident already reported and still open to `sink` as
  // kUpdated, in its current state (no new revision): after RestoreState, the
  // sinks that mirror what is open (metrics, /incidents, Alertmanager) learn
  // again what a restart resumed. Not for the JSONL log: it has them.
  void ReportOpen(IncidentSink& sink) const;

  // Serialises deployments, facts and open incidents (versioned JSON). The
  // daemon saves it with the checkpoint of the lines it reflects, so a restart
  // resumes incidents with the same ids instead of opening duplicates.
  std::string SaveState() const;
  // Restores a SaveState() blob into a correlator with no open incident,
  // registering its sources by name where they are not registered yet;
  // incidents of rules no longer in the pack are dropped and counted.
  // Returns DataLossError on a malformed or foreign blob, and then leaves the
  // correlator exactly as it was.
  Status RestoreState(const std::string& state);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Renders an incident as the one-line JSON object of DESIGN.md §6 (no newline).
std::string IncidentToJson(const Incident& incident);
// Renders an incident as a block of text for people.
std::string IncidentToText(const Incident& incident);
// Microseconds since the epoch -> "2026-03-04T10:15:22Z" (".123456" when not whole).
std::string FormatRfc3339(int64_t time_us);

}  // namespace fingerprintd::correlate
