// The correlator's state, and its serialisation for checkpoints.
//
// Internal to src/correlate. The state is plain data so that the daemon can
// save it with a file checkpoint (after the lines it reflects were
// processed) and a restart resumes open incidents with the same ids instead
// of opening duplicates. Serialised as JSON with a version field; rules are
// referenced by id and sources by name, so a restart that registers its
// sources in another order, or reloads the rule pack, still restores.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "fingerprintd/rules.h"

namespace fingerprintd::correlate {

// KnownWorker::source_id of a worker whose source was forgotten.
constexpr uint32_t kNoSource = UINT32_MAX;

struct KnownWorker {
  WorkerInfo info;
  uint32_t source_id = 0;  // kNoSource once its source was forgotten
};

struct Deployment {
  std::string name;
  std::map<std::string, std::string> labels;  // from the sources, first value wins
  std::map<std::string, std::string> facts;   // first value wins
  std::vector<KnownWorker> workers;           // worker-role streams seen
  size_t live_sources = 0;                    // registered and not forgotten
  // Event time at which it was first seen with no live source (0: it has
  // one): its open incidents close as gone Options::gone_after_us later.
  int64_t gone_since_us = 0;
  // Log time of its latest dated ready line (0: none): a failure dated before
  // it but decided after it is closed as recovered at once.
  int64_t ready_us = 0;
  // Log time of its latest operator's stop (0: none) and until when what
  // follows it is what the stop provoked (the stop rule's window).
  int64_t stop_us = 0, stop_until_us = 0;
  // Per rule id, the last incident closed as recovered and when: a failure of
  // the same rule after it is a new incident that regressed from it.
  std::map<std::string, std::pair<std::string, int64_t>> recovered;
  // Log times of its latest start lines (a `kind: start` rule: the engine's
  // start banner), ascending, the last kMaxStarts: each begins an attempt.
  std::vector<int64_t> starts;
  // Per (data-parallel group, 0 when not said; global rank), the log time of its latest
  // rank-scoped ready line (its own start past every start-up phase), at
  // most Options::max_known_workers.
  std::map<std::pair<int32_t, int32_t>, int64_t> rank_ready;
};

constexpr size_t kMaxStarts = 32;

// One process's part in a consequence: the process that printed it.
struct ConsequenceProcess {
  std::string label;  // as the incident names its workers (a re-raise: the worker it names)
  int32_t rank = -1;  // global rank, -1 = unknown
  int64_t first_seen_us = 0, last_seen_us = 0;  // symptom times the log gave (0: none)
  uint64_t hits = 0;
  bool has_evidence = false;
  rules::EvidenceLine evidence;  // its earliest symptom line
};

// A consequence folded into its cause's incident (IncidentConsequence in the
// making), per printing process (WorkerInfo::Label()): a process whose own
// report turns out to be the cause's failure (its copy of the cause's
// traceback, read later) is taken out again, so the list does not depend on
// the order the two were read in.
struct FoldedConsequence {
  const rules::Rule* rule = nullptr;
  std::map<std::string, ConsequenceProcess> processes;
};

struct WorkerHits {
  std::string label;
  int32_t pid = -1;
  std::string ip;
  int32_t rank = -1;                 // global rank within its data-parallel group, -1 = unknown
  int32_t dp = -1;                   // data-parallel group, -1 = none
  std::vector<rules::RuleHit> hits;  // its own hits (role worker) or re-raises naming it
  bool own = false;                  // it reported itself (not only through a re-raise)
};

struct OpenIncident {
  const rules::Rule* rule = nullptr;
  Deployment* deployment = nullptr;
  std::string id;
  int64_t first_seen_us = 0, last_seen_us = 0;  // over every matched stage
  int64_t anchor_us = 0;                        // earliest symptom: the window is measured from it
  // Earliest symptom time the log itself gave (not a reading time,
  // RuleHit::time_read); 0 if none: what the id is made of.
  int64_t id_time_us = 0;
  // first_seen_us and last_seen_us are reading times: none of its hits had a
  // time of its own yet. The first that has one replaces them, so the seen
  // times a user reads are the log's, as in replay.
  bool seen_read = false;
  std::vector<WorkerHits> workers;
  std::vector<rules::RuleHit> reraises;  // engine core / API server copies without a known origin
  // Attempts (occurrences) folded in, and the earliest symptom time the log
  // gave for the current one (0: none yet): a hit more than a window after it
  // starts the next attempt. `workers` and `reraises` are the current
  // attempt's; `reported` once the current attempt was emitted.
  int occurrences = 1;
  int64_t attempt_us = 0;
  // The first symptom time of each attempt, ascending, the last kMaxStarts
  // (back() == attempt_us): a consequence read late is told which attempt it
  // belongs to, so folding does not depend on the order of reading.
  std::vector<int64_t> attempt_starts;
  bool reported = false;
  std::string regressed_from;
  int revision = 0;
  bool dirty = false;  // changed since last emission
  uint64_t order = 0;  // creation order, for deterministic emission
  uint64_t hits = 0;   // every hit folded in; `workers` and `reraises` keep a sample
  // What the current attempt's failure provoked, one entry per rule, in the
  // order they were first folded (Incident::consequences).
  std::vector<FoldedConsequence> consequences;
};

// 2: no lifetime (occurrences, gone, recovered); 3: no starts, no consequences.
constexpr int kStateVersion = 4;

// However many hits fold into an incident (a worker repeating one traceback
// for hours), it keeps this many per worker, and this many re-raises: the
// first ones, with a confirmed hit replacing the last kept one if none of the
// kept ones is confirmed.
constexpr size_t kMaxHitsPerWorker = 4;
constexpr size_t kMaxReraises = 16;

// Source ids are written as names (`source_names[id]`) and read back through
// `source_ids` (name -> id in the restoring process).
nlohmann::json WorkerToJson(const WorkerInfo& worker);
WorkerInfo WorkerFromJson(const nlohmann::json& j);
nlohmann::json HitToJson(const rules::RuleHit& hit, const std::vector<std::string>& source_names);
// Returns false if the hit's rule is not in `rules` (the pack changed).
bool HitFromJson(const nlohmann::json& j, const rules::RuleSet& rules,
                 const std::map<std::string, uint32_t>& source_ids, rules::RuleHit* hit);

}  // namespace fingerprintd::correlate
