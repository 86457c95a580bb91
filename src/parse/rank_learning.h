// Rank learning: the parallel ranks of a process whose prefix names none.
//
// Ray's workers print `(RayWorkerWrapper pid=7)` without a rank; vLLM's
// parallel_state says which rank each process is once it joins the group:
//   `world_size=2 rank=1 local_rank=0 ...`
//   `rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1, EP rank 1`
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fingerprintd/log_record.h"

namespace fingerprintd::parse {

// What rank learning reacts to (lowercase): a record whose location holds
// none of these teaches nothing.
const std::vector<std::string>& RankLearningTriggers();

// Sets the ranks of a worker without one from a record at `location`
// saying `message`; leaves it alone for any other record.
void LearnRank(WorkerInfo* worker, std::string_view location, std::string_view message);

}  // namespace fingerprintd::parse
