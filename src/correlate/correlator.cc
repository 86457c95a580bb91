// Correlator: rule hits -> one incident per (deployment, rule, window).
// See include/fingerprintd/correlate.h for the contract.
#include "correlate/correlator_impl.h"

namespace fingerprintd::correlate {

// The sizes come from log lines: a product past any real deployment is a
// garbled line, and must not overflow.
constexpr int64_t kMaxExpectedWorkers = 1 << 20;

int Correlator::Impl::Expected(const Deployment& d) const {
  int tp = TensorParallel(d);
  if (tp > 0) {
    int pp = std::max(1, ParseInt(d.facts, "pipeline_parallel_size"));
    return static_cast<int>(std::min<int64_t>(int64_t{tp} * pp, kMaxExpectedWorkers));
  }
  int world = ParseInt(d.facts, "world_size");
  if (world > 0) return world;
  return static_cast<int>(d.workers.size());
}

void Correlator::Impl::OnWorkerSeen(uint32_t source_id, const WorkerInfo& worker) {
  Deployment* d = DeploymentFor(source_id);
  if (d == nullptr || worker.role != ProcessRole::kWorker) return;
  for (KnownWorker& w : d->workers) {
    if (w.info.pid >= 0 ? SameProcess(w.info.pid, w.info.ip, worker.pid, worker.ip)
                        : w.info.Label() == worker.Label()) {
      if (worker.rank >= 0) w.info.rank = worker.rank;
      return;
    }
  }
  // A rank that restarted (a new pid for the same data-parallel group and
  // rank) takes its old process's place, so a crash loop does not grow the
  // deployment; past the cap the oldest worker is forgotten, counted.
  const int tp = TensorParallel(*d);
  const int32_t rank = worker.GlobalRank(tp);
  for (KnownWorker& w : d->workers) {
    if (rank >= 0 && w.info.GlobalRank(tp) == rank && w.info.dp == worker.dp) {
      w = KnownWorker{worker, source_id};
      return;
    }
  }
  if (d->workers.size() >= options.max_known_workers) {
    d->workers.erase(d->workers.begin());
    events.StateEvicted(Evicted::kWorker);
  }
  d->workers.push_back(KnownWorker{worker, source_id});
}

OpenIncident* Correlator::Impl::Open(Deployment* d, const RuleHit& hit) {
  if (open.size() >= options.max_open_incidents) {
    events.StateEvicted(Evicted::kIncident);
    CloseOldest();
  }
  auto inc = std::make_unique<OpenIncident>();
  inc->rule = hit.rule;
  inc->deployment = d;
  inc->first_seen_us = hit.first_time_us;
  inc->last_seen_us = hit.time_us;
  inc->anchor_us = hit.time_us;
  inc->seen_read = hit.time_read;
  inc->order = next_order++;
  // A failure that comes back after the deployment recovered from it.
  if (auto it = d->recovered.find(hit.rule->id); it != d->recovered.end()) {
    const auto& [id, closed_us] = it->second;
    if (options.max_age_us == 0 || hit.time_read || hit.time_us - closed_us <= options.max_age_us) {
      inc->regressed_from = id;
    }
  }
  open.push_back(std::move(inc));
  return open.back().get();
}

bool Correlator::Impl::Attempt(OpenIncident& inc, int64_t log_time_us, bool restarted) {
  if (log_time_us == 0) return false;
  const int64_t window = Window(*inc.rule);
  std::vector<int64_t>& starts = inc.attempt_starts;
  if (inc.attempt_us != 0 && (restarted || log_time_us > inc.attempt_us + window)) {
    ++inc.occurrences;
    inc.attempt_us = log_time_us;
    starts.push_back(log_time_us);
    if (starts.size() > kMaxStarts) starts.erase(starts.begin());
    inc.workers.clear();
    inc.reraises.clear();
    inc.consequences.clear();
    inc.reported = false;
    return true;
  }
  bool changed = false;
  if (inc.attempt_us == 0 ||
      (log_time_us < inc.attempt_us && log_time_us >= inc.attempt_us - window)) {
    // An earlier symptom of the same attempt (another rank's, decided later)
    // moves its start.
    inc.attempt_us = log_time_us;
    if (starts.empty()) starts.push_back(log_time_us);
    starts.back() = log_time_us;
    changed = true;
  } else if (log_time_us < inc.attempt_us - window) {
    // One of an earlier attempt (a source read late) only joins the current
    // one; where that attempt began is remembered, for the consequences read
    // late (CauseFor).
    auto next = std::upper_bound(starts.begin(), starts.end(), log_time_us);
    const bool in_previous = next != starts.begin() && log_time_us <= *std::prev(next) + window;
    if (!in_previous && next != starts.end() && *next - window <= log_time_us) {
      *next = log_time_us;
      changed = true;
    } else if (!in_previous) {
      starts.insert(next, log_time_us);
      if (starts.size() > kMaxStarts) starts.erase(starts.begin());
      changed = true;
    }
  }
  // The id's time is the first attempt's earliest symptom.
  if (inc.occurrences == 1 && (inc.id_time_us == 0 || log_time_us < inc.id_time_us)) {
    inc.id_time_us = log_time_us;
  }
  return changed;
}

void Correlator::Impl::Recover(Deployment& d, const RuleHit& ready) {
  if (ready.confidence != Confidence::kConfirmed) return;
  if (ready.rule->rank_scope) {
    RecoverRank(d, ready);
    return;
  }
  const bool dated = ready.time_us != 0 && !ready.time_read;
  if (dated) d.ready_us = std::max(d.ready_us, ready.time_us);
  std::vector<OpenIncident*> recovered;
  for (auto& inc : open) {
    if (inc->deployment != &d) continue;
    // Only what failed before the ready line (by the log's times when both
    // have one): a failure after the server came up is not healed by it.
    if (dated && !inc->seen_read && inc->last_seen_us > ready.time_us) continue;
    recovered.push_back(inc.get());
  }
  CloseRecovered(d, std::move(recovered), ready.time_us);
}

void Correlator::Impl::RecoverRank(Deployment& d, const RuleHit& ready) {
  if (ready.time_read || ready.time_us == 0) return;  // no order to go by
  const HitProcess p = Identify(d, ready);
  if (!p.own || p.rank < 0) return;
  // Data-parallel group 0 and "not said" are one group: a restarted rank
  // has not printed its group yet when its graphs are captured.
  auto group = [](int32_t dp) { return std::max(dp, 0); };
  int64_t& at = d.rank_ready[{group(p.dp), p.rank}];
  at = std::max(at, ready.time_us);
  if (d.rank_ready.size() > options.max_known_workers) {
    d.rank_ready.erase(d.rank_ready.begin());
    events.StateEvicted(Evicted::kWorker);
  }
  std::vector<OpenIncident*> recovered;
  for (auto& inc : open) {
    if (inc->deployment != &d || inc->seen_read || inc->workers.empty()) continue;
    const bool all_started =
        std::all_of(inc->workers.begin(), inc->workers.end(), [&](const WorkerHits& w) {
          auto it = w.rank < 0 ? d.rank_ready.end() : d.rank_ready.find({group(w.dp), w.rank});
          return it != d.rank_ready.end() && it->second > inc->last_seen_us;
        });
    if (all_started) recovered.push_back(inc.get());
  }
  CloseRecovered(d, std::move(recovered), ready.time_us);
}

void Correlator::Impl::CloseRecovered(Deployment& d, std::vector<OpenIncident*> recovered,
                                      int64_t at_us) {
  if (recovered.empty()) return;
  std::stable_sort(recovered.begin(), recovered.end(), StrongerFirst);
  for (OpenIncident* inc : recovered) {
    Close(*inc, CloseReason::kRecovered, at_us);
    if (inc->revision > 0) d.recovered[inc->rule->id] = {inc->id, at_us};
  }
  Forget(std::set<OpenIncident*>(recovered.begin(), recovered.end()));
}

void Correlator::Impl::OnHit(RuleHit hit) {
  Deployment* d = DeploymentFor(hit.source_id);
  if (d == nullptr || hit.rule == nullptr) return;
  const int64_t log_time = hit.time_read ? 0 : hit.time_us;
  switch (hit.rule->kind) {
    case rules::RuleKind::kReady:
      Recover(*d, hit);
      return;
    case rules::RuleKind::kStart:
      if (log_time != 0) AddStart(*d, log_time);
      return;
    case rules::RuleKind::kStop:
      if (hit.confidence == Confidence::kConfirmed && log_time != 0) {
        d->stop_us = hit.time_us;
        d->stop_until_us = hit.time_us + Window(*hit.rule);
      }
      return;
    case rules::RuleKind::kFailure:
      break;
  }
  // What an operator's stop provokes (a dead engine, workers killed, a
  // collective aborted) is no failure; a cause of its own still is.
  if (hit.rule->consequence && d->stop_us != 0 && hit.time_us >= d->stop_us &&
      hit.time_us <= d->stop_until_us) {
    events.HitAfterStop(hit.rule->id);
    return;
  }
  OpenIncident* inc = FindOpen(d, hit.rule);
  // What an earlier failure of this attempt provoked is part of its incident.
  if (hit.rule->consequence) {
    const Cause c = CauseFor(*d, log_time, HitStrength(hit), inc);
    if (c.cause != nullptr && !SameFailure(*c.cause, hit)) {
      // One of an earlier attempt (read late) is that attempt's, whose
      // consequences were not kept: it only stays off the pages.
      if (c.current) Fold(*c.cause, hit, 1);
      return;
    }
  }
  const bool opened = inc == nullptr;
  if (opened) inc = Open(d, hit);
  const bool restarted =
      log_time != 0 && inc->attempt_us != 0 && log_time > inc->attempt_us &&
      (StartedBetween(*d, inc->attempt_us, log_time) || RankRestarted(*inc, Identify(*d, hit)));
  const bool attempts_changed = Attempt(*inc, log_time, restarted);
  if (inc->seen_read && !hit.time_read) {
    inc->first_seen_us = inc->last_seen_us = 0;
    inc->seen_read = false;
  }
  if (inc->seen_read || !hit.time_read) {
    if (hit.first_time_us != 0 &&
        (inc->first_seen_us == 0 || hit.first_time_us < inc->first_seen_us)) {
      inc->first_seen_us = hit.first_time_us;
    }
    inc->last_seen_us = std::max(inc->last_seen_us, hit.time_us);
  }
  if (hit.time_us != 0 && (inc->anchor_us == 0 || hit.time_us < inc->anchor_us)) {
    inc->anchor_us = hit.time_us;
  }
  inc->dirty = true;
  ++inc->hits;
  DropRelayed(*inc, hit);
  AddHit(*d, inc, std::move(hit));
  if (opened || attempts_changed) TakeConsequences(*inc);
  // Page as soon as every expected worker of the attempt reported; later
  // changes are emitted at the attempt window's end or Finish().
  if (Strength(*inc) == kStrongest && !inc->reported && AllReported(*inc)) Emit(*inc);
  // A failure decided after a ready line that its log time precedes (a
  // symptom waiting for its traceback until the end of the input) had
  // already recovered: the order of decisions must not keep it open.
  if (!inc->seen_read && inc->last_seen_us != 0 && inc->last_seen_us < d->ready_us) {
    Close(*inc, CloseReason::kRecovered, d->ready_us);
    if (inc->revision > 0) d->recovered[inc->rule->id] = {inc->id, d->ready_us};
    Forget({inc});
  }
}

HitProcess Correlator::Impl::Identify(const Deployment& d, const RuleHit& hit) const {
  HitProcess p;
  p.own = hit.worker.role == ProcessRole::kWorker;
  p.pid = p.own ? hit.worker.pid : hit.origin_pid;
  p.ip = p.own ? hit.worker.ip : hit.origin_ip;
  if (!p.own && p.pid < 0) {
    p.label = hit.worker.Label();
    return p;
  }
  const int tp = TensorParallel(d);
  if (p.own) {
    p.rank = hit.worker.GlobalRank(tp);
    p.dp = hit.worker.dp;
    p.label = hit.worker.Label();
  } else if (const KnownWorker* known = FindWorker(d, p.pid, p.ip)) {
    p.rank = known->info.GlobalRank(tp);
    p.dp = known->info.dp;
    p.label = known->info.Label();
  } else {
    p.label = "pid=" + std::to_string(p.pid) + (p.ip.empty() ? "" : " ip=" + p.ip);
  }
  return p;
}

void Correlator::Impl::AddHit(const Deployment& d, OpenIncident* inc, RuleHit hit) {
  const HitProcess p = Identify(d, hit);
  if (!p.own && p.pid < 0) {
    KeepSample(&inc->reraises, kMaxReraises, std::move(hit));
    return;
  }
  for (WorkerHits& w : inc->workers) {
    bool same = (p.pid >= 0 && SameProcess(w.pid, w.ip, p.pid, p.ip)) ||
                (p.rank >= 0 && w.rank == p.rank && w.dp == p.dp) ||
                (p.pid < 0 && p.rank < 0 && w.pid < 0 && w.label == p.label);
    if (!same) continue;
    if (p.own && !w.own) {
      w.own = true;
      w.label = p.label;
    }
    if (w.rank < 0 && p.rank >= 0) {
      w.rank = p.rank;
      w.dp = p.dp;
    }
    KeepSample(&w.hits, kMaxHitsPerWorker, std::move(hit));
    return;
  }
  WorkerHits w;
  w.pid = p.pid;
  w.ip = p.ip;
  w.own = p.own;
  w.label = p.label;
  w.rank = p.rank;
  w.dp = p.dp;
  w.hits.push_back(std::move(hit));
  inc->workers.push_back(std::move(w));
}

void Correlator::Impl::KeepSample(std::vector<RuleHit>* kept, size_t cap, RuleHit hit) {
  if (kept->size() < cap) {
    kept->push_back(std::move(hit));
    return;
  }
  if (hit.confidence != Confidence::kConfirmed) return;
  for (const RuleHit& k : *kept) {
    if (k.confidence == Confidence::kConfirmed) return;
  }
  kept->back() = std::move(hit);
}

bool Correlator::Impl::Suppressed(const OpenIncident& inc) const {
  int strength = Strength(inc);
  if (strength == kStrongest) return false;
  for (const auto& other : open) {
    if (other.get() == &inc || other->deployment != inc.deployment) continue;
    // Two families (or two catch-alls) of one class read the same failure:
    // one incident, the earlier one's (then by place, then by id). Two
    // families of different classes that read the very same symptom line:
    // one incident too, the one FamilyPreferred names.
    const bool peer = strength <= 1 && Strength(*other) == strength &&
                      (other->rule->rule_class == inc.rule->rule_class ||
                       (strength == 1 && SameSymptom(*other, inc))) &&
                      FamilyPreferred(*other, inc);
    if (Strength(*other) <= strength && !peer) continue;
    int64_t w = std::max(Window(*inc.rule), Window(*other->rule));
    if (inc.id_time_us == 0 || other->id_time_us == 0 ||
        (other->last_seen_us >= inc.id_time_us - w && other->id_time_us <= inc.last_seen_us + w)) {
      return true;
    }
  }
  return false;
}

bool Correlator::Impl::SameSymptom(const OpenIncident& a, const OpenIncident& b) {
  auto lines = [](const OpenIncident& inc) {
    std::set<std::pair<uint32_t, uint64_t>> out;
    auto add = [&](const RuleHit& h) {
      for (const rules::EvidenceLine& e : h.stages) {
        if (e.stage == h.rule->stages[h.rule->symptom_stage].id) out.insert({e.source_id, e.line});
      }
    };
    for (const WorkerHits& w : inc.workers) {
      for (const RuleHit& h : w.hits) add(h);
    }
    for (const RuleHit& h : inc.reraises) add(h);
    return out;
  };
  const auto la = lines(a);
  for (const auto& l : lines(b)) {
    if (la.count(l) != 0) return true;
  }
  return false;
}

bool Correlator::Impl::FamilyPreferred(const OpenIncident& a, const OpenIncident& b) {
  // Of one failure read by families of two classes, the GPU the words name
  // is the firmer evidence: hardware_support's vocabulary needs an
  // architecture, a capability or the driver's words for a missing kernel.
  const bool a_hw = a.rule->rule_class == "hardware_support";
  const bool b_hw = b.rule->rule_class == "hardware_support";
  if (a.rule->rule_class != b.rule->rule_class && a_hw != b_hw) return a_hw;
  if (a.id_time_us != 0 && b.id_time_us != 0 && a.id_time_us != b.id_time_us) {
    return a.id_time_us < b.id_time_us;
  }
  // The place a failure was raised is firmer evidence than its words.
  const bool a_place = a.rule->traceback && a.rule->traceback->raised_in;
  const bool b_place = b.rule->traceback && b.rule->traceback->raised_in;
  if (a_place != b_place) return a_place;
  return a.rule->id < b.rule->id;
}

void Correlator::Impl::Emit(OpenIncident& inc) {
  if (inc.revision == 0) {
    // What the incident is: its deployment, its rule and its earliest
    // symptom among the hits it has when first reported. Not the first hit
    // to arrive: live input may decide one rank's traceback before
    // another's where replay does the opposite, and both must give one id.
    // Only a time the log gave counts: a line without one is dated by its
    // reading live and 0 in replay, and the id must not depend on that.
    inc.id = "inc-" +
             Hex64(Fnv1a64({inc.deployment->name, inc.rule->id, std::to_string(inc.id_time_us)}));
  }
  ++inc.revision;
  inc.dirty = false;
  inc.reported = true;
  Incident out = Build(inc);
  if (inc.revision == 1) {
    events.IncidentOpened(inc.rule->id, inc.rule->rule_class, rules::SeverityName(out.severity));
    sink.OnIncident(IncidentChange::kOpened, out);
  } else {
    events.IncidentUpdated(inc.rule->id);
    sink.OnIncident(IncidentChange::kUpdated, out);
  }
}

void Correlator::Impl::Close(OpenIncident& inc, CloseReason reason, int64_t closed_us,
                             const std::string& folded_into) {
  if (inc.dirty && !Suppressed(inc) && reason != CloseReason::kFolded) Emit(inc);
  inc.dirty = false;
  if (inc.revision == 0) return;
  ++inc.revision;
  Incident out = Build(inc);
  out.closed = reason;
  out.closed_us = closed_us;
  out.folded_into = folded_into;
  sink.OnIncident(IncidentChange::kClosed, out);
}

void Correlator::Impl::Forget(const std::set<OpenIncident*>& gone) {
  std::set<Deployment*> touched;
  for (OpenIncident* inc : gone) touched.insert(inc->deployment);
  open.erase(std::remove_if(open.begin(), open.end(),
                            [&](const auto& inc) { return gone.count(inc.get()) > 0; }),
             open.end());
  for (Deployment* d : touched) ForgetIfIdle(d);
}

void Correlator::Impl::ForgetIfIdle(Deployment* d) {
  if (d == nullptr || d->live_sources > 0) return;
  for (const auto& inc : open) {
    if (inc->deployment == d) return;
  }
  events.StateEvicted(Evicted::kDeployment);
  deployments.erase(d->name);
}

void Correlator::Impl::ForgetSource(uint32_t id) {
  if (id >= source_state.size() || source_state[id] != SourceState::kLive) return;
  source_state[id] = SourceState::kForgotten;
  forgotten_ids.push_back(id);
  Deployment* d = source_deployment[id];
  source_deployment[id] = nullptr;
  for (KnownWorker& w : d->workers) {
    if (w.source_id == id) w.source_id = kNoSource;
  }
  --d->live_sources;
  ForgetIfIdle(d);
}

std::vector<bool> Correlator::Impl::ReferencedIds() const {
  std::vector<bool> used(source_names.size(), false);
  auto mark = [&](const RuleHit& h) {
    if (h.source_id < used.size()) used[h.source_id] = true;
    for (const rules::EvidenceLine& e : h.stages) {
      if (e.source_id < used.size()) used[e.source_id] = true;
    }
  };
  for (const auto& inc : open) {
    for (const WorkerHits& w : inc->workers) {
      for (const RuleHit& h : w.hits) mark(h);
    }
    for (const RuleHit& h : inc->reraises) mark(h);
    for (const FoldedConsequence& c : inc->consequences) {
      for (const auto& [printer, p] : c.processes) {
        if (p.has_evidence && p.evidence.source_id < used.size()) used[p.evidence.source_id] = true;
      }
    }
  }
  return used;
}

void Correlator::Impl::ReclaimIds() {
  const std::vector<bool> used = ReferencedIds();
  std::erase_if(forgotten_ids, [&](uint32_t id) {
    if (used[id]) return false;
    source_state[id] = SourceState::kFree;
    std::string().swap(source_names[id]);
    free_ids.push_back(id);
    return true;
  });
  reclaim_at = std::max<size_t>(64, 2 * forgotten_ids.size());
}

void Correlator::Impl::AdvanceTo(const Deployment* deployment, int64_t now_us) {
  std::vector<OpenIncident*> ended, unseen, expired, gone;
  for (auto& inc : open) {
    Deployment* d = inc->deployment;
    if (deployment != nullptr && d != deployment) continue;
    if (d->live_sources > 0) {
      d->gone_since_us = 0;
    } else if (d->gone_since_us == 0) {
      d->gone_since_us = now_us;
    }
    if (d->live_sources == 0 && now_us - d->gone_since_us >= options.gone_after_us) {
      gone.push_back(inc.get());
      continue;
    }
    if (inc->last_seen_us == 0) continue;
    const int64_t window = Window(*inc->rule);
    if (inc->last_seen_us + window < now_us) ended.push_back(inc.get());
    if (inc->last_seen_us + 2 * window < now_us) unseen.push_back(inc.get());
    if (options.max_age_us > 0 && LastSign(*inc) + options.max_age_us < now_us) {
      expired.push_back(inc.get());
    }
  }
  // Stronger incidents first, so that weaker ones see them when deciding.
  std::stable_sort(ended.begin(), ended.end(), StrongerFirst);
  for (OpenIncident* inc : ended) {
    if (inc->dirty && !Suppressed(*inc)) Emit(*inc);
    inc->dirty = false;
  }
  // Still never emitted a window after its window ended: a stronger
  // incident covered it.
  std::erase_if(unseen, [](const OpenIncident* inc) { return inc->revision > 0; });
  std::erase_if(expired, [](const OpenIncident* inc) { return inc->revision == 0; });
  std::set<OpenIncident*> closed(unseen.begin(), unseen.end());
  for (auto [list, reason] :
       {std::pair{&expired, CloseReason::kExpired}, std::pair{&gone, CloseReason::kGone}}) {
    std::stable_sort(list->begin(), list->end(), StrongerFirst);
    for (OpenIncident* inc : *list) {
      Close(*inc, reason, now_us);
      closed.insert(inc);
    }
  }
  if (!closed.empty()) Forget(closed);
}

void Correlator::Impl::Finish() {
  std::vector<OpenIncident*> all;
  for (auto& inc : open) all.push_back(inc.get());
  std::stable_sort(all.begin(), all.end(), StrongerFirst);
  std::set<OpenIncident*> unseen;
  for (OpenIncident* inc : all) {
    if (inc->dirty && !Suppressed(*inc)) Emit(*inc);
    inc->dirty = false;
    if (inc->revision == 0) unseen.insert(inc);
  }
  Forget(unseen);
}

uint32_t Correlator::Impl::AddSource(const std::string& name, const std::string& deployment,
                                     const std::map<std::string, std::string>& labels) {
  auto& d = deployments[deployment];
  if (!d) {
    d = std::make_unique<Deployment>();
    d->name = deployment;
  }
  for (const auto& [k, v] : labels) d->labels.emplace(k, v);
  ++d->live_sources;
  d->gone_since_us = 0;
  if (free_ids.empty() && forgotten_ids.size() >= reclaim_at) ReclaimIds();
  if (!free_ids.empty()) {
    const uint32_t id = free_ids.back();
    free_ids.pop_back();
    source_names[id] = name;
    source_deployment[id] = d.get();
    source_state[id] = SourceState::kLive;
    return id;
  }
  source_names.push_back(name);
  source_deployment.push_back(d.get());
  source_state.push_back(SourceState::kLive);
  return static_cast<uint32_t>(source_names.size() - 1);
}

Incident Correlator::Impl::Build(const OpenIncident& inc) const {
  const rules::Rule& rule = *inc.rule;
  const Deployment& d = *inc.deployment;
  Incident out;
  out.incident_id = inc.id;
  out.rule = std::shared_ptr<const rules::Rule>(rules, &rule);
  out.hits = inc.hits;
  out.deployment = d.name;
  out.labels = d.labels;
  out.first_seen_us = inc.first_seen_us;
  out.last_seen_us = inc.last_seen_us;
  out.revision = inc.revision;
  out.occurrences = inc.occurrences;
  out.regressed_from = inc.regressed_from;
  out.remediation = rule.remediation;

  // Affected workers; with no worker at all (TP=1 uni executor, or only the
  // engine core's copy survived) the failing process is the engine core.
  out.affected = static_cast<int>(inc.workers.size());
  if (out.affected == 0 && !inc.reraises.empty()) out.affected = 1;
  out.expected = std::max(Expected(d), out.affected);
  int tp = TensorParallel(d);
  std::map<std::string, int> fingerprints;
  // Workers by label, not by arrival: which rank's traceback was decided
  // first depends on the pace of reading, and the exception, the stage lines
  // and the evidence must not (live equals replay).
  std::vector<const WorkerHits*> ordered;
  for (const WorkerHits& w : inc.workers) ordered.push_back(&w);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const WorkerHits* a, const WorkerHits* b) { return a->label < b->label; });
  std::vector<const RuleHit*> all_hits;
  for (const WorkerHits* worker : ordered) {
    const WorkerHits& w = *worker;
    out.workers.push_back(w.label);
    int32_t rank = w.rank;
    if (rank < 0 && w.pid >= 0) {
      if (const KnownWorker* known = FindWorker(d, w.pid, w.ip)) rank = known->info.GlobalRank(tp);
    }
    if (rank >= 0) out.ranks.push_back(rank);
    // The worker's own traceback decides; a re-raise printed by another
    // process (Ray adds its own frames) only when the worker's is missing.
    std::string fp, relayed_fp;
    for (const RuleHit& h : w.hits) {
      bool own = h.worker.role == ProcessRole::kWorker;
      std::string& slot = own ? fp : relayed_fp;
      if (slot.empty()) slot = h.traceback_fingerprint;
      all_hits.push_back(&h);
    }
    if (fp.empty()) fp = relayed_fp;
    ++fingerprints[fp];
  }
  for (const RuleHit& h : inc.reraises) {
    all_hits.push_back(&h);
    if (inc.workers.empty()) ++fingerprints[h.traceback_fingerprint];
  }
  std::sort(out.workers.begin(), out.workers.end());
  std::sort(out.ranks.begin(), out.ranks.end());
  out.ranks.erase(std::unique(out.ranks.begin(), out.ranks.end()), out.ranks.end());
  // Identical: two or more failed workers, one traceback among them (a lone
  // worker is not "identical" to anything).
  out.identical = fingerprints.size() == 1 && !fingerprints.begin()->first.empty() &&
                  fingerprints.begin()->second >= 2;
  int best = 0;
  for (const auto& [fp, count] : fingerprints) {
    if (!fp.empty() && count > best) {
      best = count;
      out.traceback_fingerprint = fp;
    }
  }

  for (const RuleHit* h : all_hits) {
    if (h->confidence == Confidence::kConfirmed) out.confidence = Confidence::kConfirmed;
    if (out.exception.empty()) {
      out.exception = h->exception;
      out.raised_in = h->raised_in;
    }
  }

  // Stages: matched if any hit matched them; line refs capped.
  for (const rules::Stage& stage : rule.stages) {
    IncidentStage s{stage.id, stage.required, false, {}};
    for (const RuleHit* h : all_hits) {
      for (const rules::EvidenceLine& e : h->stages) {
        if (e.stage != stage.id) continue;
        s.matched = true;
        if (s.lines.size() < 8) s.lines.emplace_back(source_names[e.source_id], e.line);
      }
    }
    out.stages.push_back(std::move(s));
  }

  // Evidence: per hit its stage lines, then its exception, capped; worker
  // hits first (ordered by worker label), re-raises last.
  std::set<std::pair<uint32_t, uint64_t>> used;
  auto add = [&](uint32_t source, uint64_t line, const std::string& text) {
    if (out.evidence.size() >= options.max_evidence) return;
    if (!used.insert({source, line}).second) return;
    out.evidence.push_back(IncidentEvidence{source_names[source], line, text});
  };

  for (const WorkerHits* w : ordered) {
    for (const RuleHit& h : w->hits) {
      for (const rules::EvidenceLine& e : h.stages) add(e.source_id, e.line, e.text);
    }
  }
  for (const RuleHit& h : inc.reraises) {
    for (const rules::EvidenceLine& e : h.stages) add(e.source_id, e.line, e.text);
  }

  std::stable_sort(out.evidence.begin(), out.evidence.end(),
                   [](const IncidentEvidence& a, const IncidentEvidence& b) {
                     return std::tie(a.source, a.line) < std::tie(b.source, b.line);
                   });

  for (const std::string& name : rule.facts) {
    auto it = d.facts.find(name);
    if (it != d.facts.end()) out.facts[name] = it->second;
  }
  out.severity = rule.severity;
  for (IncidentConsequence& c : BuildConsequences(inc)) {
    out.severity = std::max(out.severity, c.rule->severity);
    out.consequences.push_back(std::move(c));
  }
  // By first seen time, then rule: the order they were read in must not show.
  std::stable_sort(out.consequences.begin(), out.consequences.end(),
                   [](const IncidentConsequence& a, const IncidentConsequence& b) {
                     return std::tie(a.first_seen_us, a.rule->id) <
                            std::tie(b.first_seen_us, b.rule->id);
                   });
  // The cause as the failure states it: the exception, else the first
  // symptom line.
  std::string symptom_line;
  for (const RuleHit* h : all_hits) {
    for (const rules::EvidenceLine& e : h->stages) {
      if (symptom_line.empty() && e.stage == rule.stages[rule.symptom_stage].id) {
        symptom_line = e.text;
      }
    }
  }
  out.signature = Signature(rule.rule_class, out.exception, symptom_line, out.raised_in);
  out.signature_version = kSignatureVersion;
  out.explanation = ExpandExplanation(rule, *rules, out, d.facts, tp > 0);
  return out;
}

Correlator::Correlator(std::shared_ptr<const rules::RuleSet> rules, PipelineEvents& events,
                       IncidentSink& sink)
    : Correlator(std::move(rules), events, sink, Options()) {}
Correlator::Correlator(std::shared_ptr<const rules::RuleSet> rules, PipelineEvents& events,
                       IncidentSink& sink, Options options)
    : impl_(std::make_unique<Impl>(std::move(rules), events, sink, options)) {}
Correlator::~Correlator() = default;

uint32_t Correlator::AddSource(const std::string& name, const std::string& deployment,
                               const std::map<std::string, std::string>& labels) {
  return impl_->AddSource(name, deployment, labels);
}

std::string Correlator::SaveState() const { return impl_->SaveState(); }
const std::string& Correlator::SourceName(uint32_t source_id) const {
  return impl_->source_names.at(source_id);
}

void Correlator::ForgetSource(uint32_t source_id) { impl_->ForgetSource(source_id); }

size_t Correlator::source_count() const {
  return impl_->source_names.size() - impl_->free_ids.size();
}
size_t Correlator::deployment_count() const { return impl_->deployments.size(); }
bool Correlator::RemembersDeployment(const std::string& deployment) const {
  return impl_->deployments.count(deployment) != 0;
}

void Correlator::OnHit(rules::RuleHit hit) { impl_->OnHit(std::move(hit)); }
void Correlator::OnFact(uint32_t source_id, const std::string& name, const std::string& value) {
  impl_->OnFact(source_id, name, value);
}
void Correlator::OnWorkerSeen(uint32_t source_id, const WorkerInfo& worker) {
  impl_->OnWorkerSeen(source_id, worker);
}
void Correlator::OnWorkerRank(uint32_t source_id, const WorkerInfo& worker) {
  impl_->OnWorkerSeen(source_id, worker);
}
void Correlator::Advance(int64_t now_us) {
  if (now_us > 0) impl_->AdvanceTo(nullptr, now_us);
}
void Correlator::AdvanceDeployment(const std::string& deployment, int64_t now_us) {
  auto it = impl_->deployments.find(deployment);
  if (now_us > 0 && it != impl_->deployments.end()) impl_->AdvanceTo(it->second.get(), now_us);
}
void Correlator::Finish() { impl_->Finish(); }

void Correlator::ReportOpen(IncidentSink& sink) const {
  for (const auto& inc : impl_->open) {
    if (inc->revision > 0) sink.OnIncident(IncidentChange::kUpdated, impl_->Build(*inc));
  }
}

}  // namespace fingerprintd::correlate
