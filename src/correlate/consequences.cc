// Causes and what they provoked (see correlator_impl.h, "Cause and
// consequences" in fingerprintd/correlate.h): which open incident a
// consequence's hit belongs to, folding it in, taking in the consequences a
// late cause precedes, and what an incident lists of them.
#include "correlate/correlator_impl.h"

namespace fingerprintd::correlate {

Correlator::Impl::Cause Correlator::Impl::CauseFor(const Deployment& d, int64_t t, int strength,
                                                   const OpenIncident* self) const {
  Cause best;
  int64_t best_start = 0;
  auto earlier = [&](const OpenIncident& a, int64_t a_start) {
    const OpenIncident& b = *best.cause;
    if (a_start != best_start) return a_start < best_start;
    if (a.rule->consequence != b.rule->consequence) return !a.rule->consequence;
    if (Strength(a) != Strength(b)) return Strength(a) > Strength(b);
    return a.order < b.order;
  };
  for (const auto& inc : open) {
    OpenIncident* c = inc.get();
    if (c->deployment != &d || c->attempt_us == 0) continue;  // undated: no order to go by
    // A weaker reading of a stronger incident's failure is no failure of its own.
    if (Suppressed(*c)) continue;
    int64_t start = c->attempt_us;
    bool current = true;
    if (c == self) {
      // Its own incident, while this hit joins its current attempt.
      if (t != 0 && std::abs(t - c->attempt_us) > Window(*c->rule)) continue;
    } else if (t != 0) {
      // Another failure before it in the same attempt: the attempt is the
      // latest that began by t, and no start line came since. In the same
      // instant (the log's resolution is often a second) only a weaker
      // reading (a family's, the catch-all's) follows a stronger one: two
      // failures of equal standing at once have no order to go by.
      auto after = std::upper_bound(c->attempt_starts.begin(), c->attempt_starts.end(), t);
      if (after == c->attempt_starts.begin()) continue;
      start = *std::prev(after);
      if (start == t && strength >= Strength(*c)) continue;
      // The catch-all's reading within the cause's window is the same failure
      // told by another process (an engine core's, an API server's traceback
      // of it): it yields to the cause as it always did, unlisted. Past the
      // window (a dead engine ten minutes later) it is what the cause provoked.
      if (strength == 0 && t <= start + Window(*c->rule)) continue;
      current = after == c->attempt_starts.end();
      if (StartedBetween(d, start, t)) continue;
    }
    if (best.cause == nullptr || earlier(*c, start)) {
      best = Cause{c, current};
      best_start = start;
    }
  }
  if (best.cause == self) return Cause{};
  return best;
}

bool Correlator::Impl::SameFailure(const OpenIncident& cause, const RuleHit& hit) const {
  // The same failure read by another rule: its symptom line, a copy of its
  // traceback another process printed, or the same process reporting within
  // the cause's window (a rank's watchdog line and its C++ record).
  const HitProcess p = Identify(*cause.deployment, hit);
  const int64_t t = hit.time_read ? 0 : hit.time_us;
  const bool early = t == 0 || t <= cause.attempt_us + Window(*cause.rule);
  auto same = [&](const RuleHit& h) {
    if (!hit.traceback_fingerprint.empty() &&
        h.traceback_fingerprint == hit.traceback_fingerprint) {
      return true;
    }
    if (early && hit.worker.pid >= 0 && h.worker.pid == hit.worker.pid &&
        h.worker.name == hit.worker.name) {
      return true;
    }
    for (const rules::EvidenceLine& a : h.stages) {
      for (const rules::EvidenceLine& b : hit.stages) {
        if (a.source_id == b.source_id && a.line == b.line) return true;
      }
    }
    return false;
  };
  for (const WorkerHits& w : cause.workers) {
    const bool same_rank = p.rank >= 0 && w.rank == p.rank && w.dp == p.dp;
    const bool same_pid = p.pid >= 0 && SameProcess(w.pid, w.ip, p.pid, p.ip);
    if (early && (same_rank || same_pid)) return true;
    if (std::any_of(w.hits.begin(), w.hits.end(), same)) return true;
  }
  return std::any_of(cause.reraises.begin(), cause.reraises.end(), same);
}

void Correlator::Impl::Fold(OpenIncident& cause, const RuleHit& hit, uint64_t count) {
  auto it = std::find_if(cause.consequences.begin(), cause.consequences.end(),
                         [&](const FoldedConsequence& c) { return c.rule == hit.rule; });
  const bool first = it == cause.consequences.end();
  if (first) {
    cause.consequences.push_back(FoldedConsequence{hit.rule, {}});
    it = std::prev(cause.consequences.end());
  }
  ConsequenceProcess& p = it->processes[hit.worker.Label()];
  if (p.hits == 0) {
    const HitProcess who = Identify(*cause.deployment, hit);
    p.label = who.label;
    p.rank = who.rank;
  }
  p.hits += count;
  if (!hit.time_read && hit.time_us != 0) {
    if (p.first_seen_us == 0 || hit.time_us < p.first_seen_us) p.first_seen_us = hit.time_us;
    p.last_seen_us = std::max(p.last_seen_us, hit.time_us);
  }
  // Its sample line: the process's latest symptom line (by time, then source
  // and line), whichever order they were read in: where it said it last (an
  // engine core's message line and its traceback's last frame are one report
  // whether or not the message was read apart from it).
  const std::string& symptom = hit.rule->stages[hit.rule->symptom_stage].id;
  for (const rules::EvidenceLine& e : hit.stages) {
    if (e.stage == symptom && (!p.has_evidence || EvidenceBefore(p.evidence, e))) {
      p.evidence = e;
      p.has_evidence = true;
    }
  }
  cause.dirty = true;
  // A consequence that makes the incident louder is said at once; others
  // ride on its next change (its window's end, the end of the input).
  if (first && cause.reported && hit.rule->severity > LoudestSeverity(cause, hit.rule)) {
    Emit(cause);
  }
}

void Correlator::Impl::DropRelayed(OpenIncident& cause, const RuleHit& own) {
  if (own.worker.pid < 0 || cause.consequences.empty()) return;
  const std::string printer = own.worker.Label();
  for (FoldedConsequence& c : cause.consequences) {
    if (c.processes.erase(printer) > 0) cause.dirty = true;
  }
  std::erase_if(cause.consequences, [](const FoldedConsequence& c) { return c.processes.empty(); });
}

void Correlator::Impl::TakeConsequences(OpenIncident& cause) {
  // Hit by hit, as if each had come after the cause: the ones this cause now
  // precedes move into it (its current attempt's to its list, an earlier
  // attempt's off the pages); what is left stays where it was.
  std::set<OpenIncident*> emptied;
  for (const auto& inc : open) {
    OpenIncident* x = inc.get();
    if (x == &cause || x->deployment != cause.deployment || !x->rule->consequence) continue;
    const uint64_t kept_before = KeptHits(*x);
    auto moves = [&](const RuleHit& h) {
      const int64_t t = h.time_read ? 0 : h.time_us;
      if (t == 0 || SameFailure(cause, h)) return false;
      const Cause c = CauseFor(*x->deployment, t, HitStrength(h), x);
      if (c.cause != &cause) return false;
      if (c.current) Fold(cause, h, 1);
      return true;
    };
    for (WorkerHits& w : x->workers) std::erase_if(w.hits, moves);
    std::erase_if(x->workers, [](const WorkerHits& w) { return w.hits.empty(); });
    std::erase_if(x->reraises, moves);
    const uint64_t kept_after = KeptHits(*x);
    if (kept_after == kept_before) continue;
    x->dirty = true;
    if (kept_after > 0) continue;
    // All of it was what the cause provoked: its consequences go with it.
    for (const FoldedConsequence& from : x->consequences) MergeConsequence(cause, from);
    emptied.insert(x);
  }
  for (OpenIncident* x : emptied) {
    if (x->revision > 0) {
      // It was reported before its cause was read: it ends, naming the
      // incident that now holds it.
      if (cause.revision == 0) Emit(cause);
      Close(*x, CloseReason::kFolded, x->last_seen_us, cause.id);
    }
  }
  if (!emptied.empty()) Forget(emptied);
}

void Correlator::Impl::MergeConsequence(OpenIncident& cause, const FoldedConsequence& from) {
  auto it = std::find_if(cause.consequences.begin(), cause.consequences.end(),
                         [&](const FoldedConsequence& c) { return c.rule == from.rule; });
  cause.dirty = true;
  if (it == cause.consequences.end()) {
    cause.consequences.push_back(from);
    return;
  }
  for (const auto& [printer, q] : from.processes) {
    auto [at, added] = it->processes.emplace(printer, q);
    if (added) continue;
    ConsequenceProcess& p = at->second;
    p.hits += q.hits;
    if (q.first_seen_us != 0 && (p.first_seen_us == 0 || q.first_seen_us < p.first_seen_us)) {
      p.first_seen_us = q.first_seen_us;
    }
    p.last_seen_us = std::max(p.last_seen_us, q.last_seen_us);
    if (q.has_evidence && (!p.has_evidence || EvidenceBefore(p.evidence, q.evidence))) {
      p.evidence = q.evidence;
      p.has_evidence = true;
    }
  }
}

std::vector<IncidentConsequence> Correlator::Impl::BuildConsequences(
    const OpenIncident& inc) const {
  // Each consequence as its processes add up.
  std::vector<IncidentConsequence> all;
  for (const FoldedConsequence& c : inc.consequences) {
    IncidentConsequence ic;
    ic.rule = std::shared_ptr<const rules::Rule>(rules, c.rule);
    std::set<int32_t> ranks;
    std::set<std::string> workers;
    const rules::EvidenceLine* evidence = nullptr;
    for (const auto& [printer, p] : c.processes) {
      if (p.rank >= 0) ranks.insert(p.rank);
      workers.insert(p.label);
      if (p.first_seen_us != 0 && (ic.first_seen_us == 0 || p.first_seen_us < ic.first_seen_us)) {
        ic.first_seen_us = p.first_seen_us;
      }
      if (p.has_evidence && (evidence == nullptr || EvidenceBefore(*evidence, p.evidence))) {
        evidence = &p.evidence;
      }
    }
    ic.ranks.assign(ranks.begin(), ranks.end());
    ic.workers.assign(workers.begin(), workers.end());
    if (evidence != nullptr) {
      ic.evidence =
          IncidentEvidence{source_names[evidence->source_id], evidence->line, evidence->text};
    }
    all.push_back(std::move(ic));
  }
  // A family's or the catch-all's reading of a consequence a specific rule
  // names for the same processes is that rule's consequence, listed once (as
  // a weaker incident yields to a stronger one).
  auto weak = [](const rules::Rule& r) { return r.family || r.fallback; };
  auto covered = [&](const IncidentConsequence& c) {
    if (!weak(*c.rule)) return false;
    for (const IncidentConsequence& other : all) {
      if (&other == &c || weak(*other.rule)) continue;
      const bool by_rank = !c.ranks.empty() && std::includes(other.ranks.begin(), other.ranks.end(),
                                                             c.ranks.begin(), c.ranks.end());
      const bool by_process =
          c.ranks.empty() && std::includes(other.workers.begin(), other.workers.end(),
                                           c.workers.begin(), c.workers.end());
      if (by_rank || by_process) return true;
    }
    return false;
  };
  std::erase_if(all, [&](const IncidentConsequence& c) { return covered(c); });
  return all;
}

}  // namespace fingerprintd::correlate
