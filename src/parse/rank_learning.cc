#include "parse/rank_learning.h"

namespace fingerprintd::parse {
namespace {

constexpr std::string_view kParallelState = "parallel_state";

// Reads digits at s[pos]; -1 if none.
int32_t DigitsAt(std::string_view s, size_t pos) {
  int64_t v = 0;
  size_t i = pos;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && v < 1'000'000) v = v * 10 + (s[i++] - '0');
  return i == pos ? -1 : static_cast<int32_t>(v);
}

}  // namespace

const std::vector<std::string>& RankLearningTriggers() {
  static const std::vector<std::string> kTriggers = {std::string(kParallelState)};
  return kTriggers;
}

void LearnRank(WorkerInfo* worker, std::string_view location, std::string_view message) {
  if (worker->role != ProcessRole::kWorker || worker->rank >= 0 ||
      location.find(kParallelState) == std::string_view::npos) {
    return;
  }
  size_t at = message.find("world_size=");
  if (at != std::string_view::npos) {
    const size_t r = message.find(" rank=", at);
    if (r != std::string_view::npos) {
      const int32_t rank = DigitsAt(message, r + 6);
      if (rank >= 0) worker->rank = rank;
    }
    return;
  }
  if (message.substr(0, 5) != "rank " ||
      message.find(" in world size ") == std::string_view::npos) {
    return;
  }
  const int32_t rank = DigitsAt(message, 5);
  if (rank >= 0) worker->rank = rank;
  auto field = [&](std::string_view tag, int32_t* out) {
    const size_t p = message.find(tag);
    if (p == std::string_view::npos) return;
    const int32_t v = DigitsAt(message, p + tag.size());
    if (v >= 0 && *out < 0) *out = v;
  };
  field(" TP rank ", &worker->tp);
  field(" PP rank ", &worker->pp);
  field(" DP rank ", &worker->dp);
  field(" EP rank ", &worker->ep);
}

}  // namespace fingerprintd::parse
