// The correlator's working state and the declarations of its work, shared by
// correlator.cc (hits, windows, the incident lifetime) and correlator_state.cc
// (what a checkpoint keeps). Internal to src/correlate/.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "common/hash.h"
#include "correlate/correlator_state.h"
#include "correlate/explanation.h"
#include "correlate/signature.h"
#include "fingerprintd/correlate.h"

namespace fingerprintd::correlate {

using rules::Confidence;
using rules::RuleHit;

inline bool SameProcess(int32_t pid_a, const std::string& ip_a, int32_t pid_b,
                        const std::string& ip_b) {
  if (pid_a < 0 || pid_a != pid_b) return false;
  return ip_a.empty() || ip_b.empty() || ip_a == ip_b;
}

inline int ParseInt(const std::map<std::string, std::string>& facts, const std::string& name) {
  auto it = facts.find(name);
  if (it == facts.end()) return 0;
  try {
    return std::stoi(it->second);
  } catch (...) {
    return 0;
  }
}

// The process a hit is about (Correlator::Impl::Identify).
struct HitProcess {
  bool own = false;  // the hit is the worker's own (role worker)
  int32_t pid = -1;
  std::string ip;
  int32_t rank = -1, dp = -1;
  std::string label;
};

struct Correlator::Impl {
  std::shared_ptr<const rules::RuleSet> rules;
  PipelineEvents& events;
  IncidentSink& sink;
  Options options;
  // Per source id. A forgotten id keeps its name while an open incident's
  // evidence may name it; a free one is handed to the next AddSource.
  enum class SourceState : uint8_t { kLive, kForgotten, kFree };
  std::vector<std::string> source_names;
  std::vector<Deployment*> source_deployment;  // null once forgotten
  std::vector<SourceState> source_state;
  std::vector<uint32_t> forgotten_ids;  // kForgotten, not yet checked for references
  std::vector<uint32_t> free_ids;
  size_t reclaim_at = 64;  // forgotten_ids.size() that triggers a reference check
  std::map<std::string, std::unique_ptr<Deployment>> deployments;
  std::vector<std::unique_ptr<OpenIncident>> open;
  uint64_t next_order = 0;

  Impl(std::shared_ptr<const rules::RuleSet> r, PipelineEvents& e, IncidentSink& s, Options o)
      : rules(std::move(r)), events(e), sink(s), options(o) {}

  int64_t Window(const rules::Rule& rule) const {
    return options.window_us > 0 ? options.window_us : rule.window_us;
  }

  Deployment* DeploymentFor(uint32_t source_id) {
    return source_id < source_deployment.size() ? source_deployment[source_id] : nullptr;
  }

  int TensorParallel(const Deployment& d) const {
    return ParseInt(d.facts, "tensor_parallel_size");
  }

  // Expected workers: TP x PP from the engine config, else the world size
  // the workers announce, else the distinct worker streams seen.
  int Expected(const Deployment& d) const;

  const KnownWorker* FindWorker(const Deployment& d, int32_t pid, const std::string& ip) const {
    for (const KnownWorker& w : d.workers) {
      if (SameProcess(w.info.pid, w.info.ip, pid, ip)) return &w;
    }
    return nullptr;
  }

  void OnWorkerSeen(uint32_t source_id, const WorkerInfo& worker);

  void OnFact(uint32_t source_id, const std::string& name, const std::string& value) {
    Deployment* d = DeploymentFor(source_id);
    if (d != nullptr) d->facts.emplace(name, value);
  }

  // The rule's open incident in the deployment: while it is open, the same
  // failure again (a crash loop's next restart) is the same incident.
  OpenIncident* FindOpen(const Deployment* d, const rules::Rule* rule) {
    for (auto& inc : open) {
      if (inc->deployment == d && inc->rule == rule) return inc.get();
    }
    return nullptr;
  }

  OpenIncident* Open(Deployment* d, const RuleHit& hit);

  // Which hits form one attempt is decided on the times the log gave, as in
  // replay: a line dated by its reading live (0 in replay) joins the current
  // attempt. A symptom more than a window after the current attempt's first
  // starts the next one: occurrences + 1, and the workers and evidence are the
  // new attempt's (the first attempt's time stays the id).
  // A start line of the deployment between the current attempt's first
  // symptom and this hit, or a rank of the attempt failing again from a new
  // process, starts the next attempt whatever the spacing.
  // Returns whether an attempt's start changed or was added (the failures
  // it now precedes may be its consequences: TakeConsequences).
  bool Attempt(OpenIncident& inc, int64_t log_time_us, bool restarted);

  // Whether the deployment started again (a start line) after `after` and at
  // or before `upto`, both log times.
  static bool StartedBetween(const Deployment& d, int64_t after, int64_t upto) {
    auto it = std::upper_bound(d.starts.begin(), d.starts.end(), after);
    return it != d.starts.end() && *it <= upto;
  }

  static void AddStart(Deployment& d, int64_t time_us) {
    auto it = std::lower_bound(d.starts.begin(), d.starts.end(), time_us);
    if (it != d.starts.end() && *it == time_us) return;
    d.starts.insert(it, time_us);
    if (d.starts.size() > kMaxStarts) d.starts.erase(d.starts.begin());
  }

  // Whether the hit is a rank of the current attempt failing again from
  // another process: the rank restarted, so this is the next attempt.
  static bool RankRestarted(const OpenIncident& inc, const HitProcess& p) {
    if (!p.own || p.rank < 0 || p.pid < 0) return false;
    for (const WorkerHits& w : inc.workers) {
      if (w.own && w.rank == p.rank && w.dp == p.dp && w.pid >= 0 &&
          !SameProcess(w.pid, w.ip, p.pid, p.ip)) {
        return true;
      }
    }
    return false;
  }

  // The process a hit is about, as AddHit files it: its own (role worker), or
  // the worker a re-raise names by pid (pid -1: a re-raise naming none).
  HitProcess Identify(const Deployment& d, const RuleHit& hit) const;

  // The incident that caused a failure of standing `strength` (HitStrength)
  // seen at log time `t` (0: undated) in the deployment: of the open
  // incidents (not suppressed) with an attempt that began before t (or at t,
  // when stronger) and no start line since, the one whose attempt began
  // first; `self` (the failure's own incident) while t joins its current
  // attempt. `cause` null when there is none or it is `self`; `current` when
  // t is in the cause's current attempt (else an earlier one's: read late).
  struct Cause {
    OpenIncident* cause = nullptr;
    bool current = false;
  };
  Cause CauseFor(const Deployment& d, int64_t t, int strength, const OpenIncident* self) const;

  // The standing of a hit as Strength() measures an incident's.
  static int HitStrength(const RuleHit& hit) {
    if (hit.rule->fallback) return 0;
    if (hit.rule->family) return 1;
    return hit.worker.role == ProcessRole::kWorker ? kStrongest : 2;
  }

  static uint64_t KeptHits(const OpenIncident& inc) {
    uint64_t kept = inc.reraises.size();
    for (const WorkerHits& w : inc.workers) kept += w.hits.size();
    return kept;
  }

  // Whether the hit reads the cause's own failure (its symptom line, a copy of
  // its traceback another process printed, its process within its window):
  // then it is no consequence.
  bool SameFailure(const OpenIncident& cause, const RuleHit& hit) const;

  // Folds a consequence's hit (standing for `count` hits) into its cause's
  // incident.
  void Fold(OpenIncident& cause, const RuleHit& hit, uint64_t count);
  void MergeConsequence(OpenIncident& cause, const FoldedConsequence& from);
  // What the incident lists: each consequence as its processes add up, less
  // a weaker rule's reading of processes a specific rule already names.
  std::vector<IncidentConsequence> BuildConsequences(const OpenIncident& inc) const;

  // `cause` was opened or its attempt moved earlier: the consequence
  // incidents of its deployment it now precedes are folded into it; one
  // already reported closes as kFolded, naming it.
  void TakeConsequences(OpenIncident& cause);

  // The incident's rule's severity, or a consequence's (but `except`'s) if louder.
  static rules::Severity LoudestSeverity(const OpenIncident& inc, const rules::Rule* except) {
    rules::Severity loudest = inc.rule->severity;
    for (const FoldedConsequence& c : inc.consequences) {
      if (c.rule != except) loudest = std::max(loudest, c.rule->severity);
    }
    return loudest;
  }

  // The latest sign of the failure: its own last hit or a consequence's.
  static int64_t LastSign(const OpenIncident& inc) {
    int64_t last = inc.last_seen_us;
    for (const FoldedConsequence& c : inc.consequences) {
      for (const auto& [printer, p] : c.processes) last = std::max(last, p.last_seen_us);
    }
    return last;
  }

  // Evidence order that does not depend on reading: time, source, line.
  bool EvidenceBefore(const rules::EvidenceLine& a, const rules::EvidenceLine& b) const {
    return std::tie(a.time_us, source_names[a.source_id], a.line) <
           std::tie(b.time_us, source_names[b.source_id], b.line);
  }

  // `own` (a hit of the cause's own rule) came from a process that had been
  // listed as a consequence: that process's report was the cause's failure
  // relayed (its copy of the traceback), so it leaves the consequences.
  void DropRelayed(OpenIncident& cause, const RuleHit& own);

  // A ready line (a `kind: ready` rule, confirmed: its required context, such
  // as the engine's own server start, came before it): the deployment started
  // healthy, so its failures that came before are over. Each closes as
  // recovered, and is remembered for the regressed_from of the same failure
  // coming back.
  void Recover(Deployment& d, const RuleHit& ready);

  // A rank-scoped ready line (`scope: rank`: the rank's own start went past
  // every start-up phase): the incidents all of whose failed ranks started so
  // since their last failure recover. What a daemon that reads only some of a
  // deployment's ranks (another node's) sees of its recovery.
  void RecoverRank(Deployment& d, const RuleHit& ready);

  // Closes `recovered` (of `d`) as recovered at `at_us`, remembered for the
  // regressed_from of the same failure coming back.
  void CloseRecovered(Deployment& d, std::vector<OpenIncident*> recovered, int64_t at_us);

  void OnHit(RuleHit hit);

  // Files the hit under its worker. A worker is a rank of the deployment: the
  // same process (pid, and ip when both sides know it) or, once ranks are
  // known, the same (data-parallel group, rank) — so a rank that restarted
  // with a new pid is still one worker, and a Ray re-raise naming the actor's
  // pid lands on that actor.
  void AddHit(const Deployment& d, OpenIncident* inc, RuleHit hit);

  static void KeepSample(std::vector<RuleHit>* kept, size_t cap, RuleHit hit);

  bool AllReported(const OpenIncident& inc) const {
    int expected = Expected(*inc.deployment);
    return expected > 0 && static_cast<int>(inc.workers.size()) >= expected;
  }

  // How much an incident stands on its own: 3 = a specific rule's hit in a
  // worker's own stream; 2 = only engine-core / API-server / unprefixed
  // copies; 1 = a family rule (a class recognised by its vocabulary); 0 = a
  // fallback (catch-all) rule. A weaker incident is dropped when a stronger
  // one covers the same deployment and time: a re-raise never makes a second
  // incident, a family or the catch-all never shadows a real fingerprint.
  static constexpr int kStrongest = 3;
  static int Strength(const OpenIncident& inc) {
    if (inc.rule->fallback) return 0;
    if (inc.rule->family) return 1;
    return inc.workers.empty() ? 2 : kStrongest;
  }

  bool Suppressed(const OpenIncident& inc) const;
  // Whether two incidents hold a hit on the same symptom line.
  static bool SameSymptom(const OpenIncident& a, const OpenIncident& b);
  // Of two family (or fallback) incidents of one failure, whether `a` is the
  // one reported.
  static bool FamilyPreferred(const OpenIncident& a, const OpenIncident& b);

  void Emit(OpenIncident& inc);

  // Emits the last change of an incident, then its close, a revision of its
  // own; an incident that was never emitted (suppressed by a stronger one)
  // ends unseen.
  void Close(OpenIncident& inc, CloseReason reason, int64_t closed_us,
             const std::string& folded_into = "");

  void Forget(const std::set<OpenIncident*>& gone);

  // A deployment with no source left and no open incident is forgotten.
  void ForgetIfIdle(Deployment* d);

  void ForgetSource(uint32_t id);

  // The source ids the hits kept by open incidents refer to.
  std::vector<bool> ReferencedIds() const;

  // Frees the forgotten ids no open incident refers to. Run when the
  // forgotten ids reach twice what the last check left, so its cost (every
  // kept hit) is spread over the AddSource calls that follow.
  void ReclaimIds();

  static bool StrongerFirst(const OpenIncident* a, const OpenIncident* b) {
    if (Strength(*a) != Strength(*b)) return Strength(*a) > Strength(*b);
    return a->order < b->order;
  }

  // For the incidents of `deployment` (all when null), at event time now_us:
  // emits (if changed) those whose attempt's window ended; forgets unseen
  // those never emitted one window later (a stronger incident covered them);
  // closes as expired those with no occurrence for max_age, and as gone those
  // of a deployment without a source for gone_after. A window's end never
  // closes an incident: a late worker joins it, a later attempt is another
  // occurrence of it.
  void AdvanceTo(const Deployment* deployment, int64_t now_us);

  // The open-incident cap was hit: the oldest is closed early.
  void CloseOldest() {
    if (open.empty()) return;
    Close(*open.front(), CloseReason::kEvicted, open.front()->last_seen_us);
    Forget({open.front().get()});
  }

  // The end of the input: emits the last change of every incident; they stay
  // open (replay's final state "still failing"), except the ones never
  // emitted (covered by a stronger incident), forgotten unseen.
  void Finish();

  Incident Build(const OpenIncident& inc) const;
  std::string SaveState() const;
  Status RestoreState(const std::string& text);
  uint32_t AddSource(const std::string& name, const std::string& deployment,
                     const std::map<std::string, std::string>& labels);
  uint32_t AddForgotten(const std::string& name);
  void CopySourcesFrom(const Impl& other);
};

}  // namespace fingerprintd::correlate
