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
  bool reported = false;
  std::string regressed_from;
  int revision = 0;
  bool dirty = false;  // changed since last emission
  uint64_t order = 0;  // creation order, for deterministic emission
  uint64_t hits = 0;   // every hit folded in; `workers` and `reraises` keep a sample
};

constexpr int kStateVersion = 3;  // 2: no lifetime (occurrences, gone, recovered)

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
