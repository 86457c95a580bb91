// ReleasePolicy: see release_policy.h.
#include "source/release_policy.h"

#include <algorithm>

namespace fingerprintd::source {

namespace {

// Line starts kept: enough to span bound/2 (what is read between two
// releases) at bound/32 apart, with room for a release that failed.
constexpr size_t kMaxSamples = 64;

}  // namespace

ReleasePolicy::ReleasePolicy(uint64_t bound)
    : bound_(bound), step_(std::max<uint64_t>(bound / 32, 1)) {}

void ReleasePolicy::OnLine(uint64_t offset) {
  if (offset >= next_sample_) {
    samples_.push_back(offset);
    if (samples_.size() > kMaxSamples) samples_.pop_front();
    next_sample_ = offset + step_;
  }
  if (offset > allowed_ && offset - allowed_ >= bound_ / 2) due_ = true;
}

uint64_t ReleasePolicy::Target(uint64_t safe, uint64_t next, bool* forced) const {
  *forced = false;
  const uint64_t keep = bound_ / 4;
  uint64_t target = safe;
  if (next > safe && next - safe > keep) {
    // The pipeline holds lines further back than the bound allows.
    *forced = true;
    target = next;
    for (uint64_t sample : samples_) {
      if (sample >= next - keep && sample <= next) {
        target = sample;
        break;
      }
    }
  }
  return std::max(target, allowed_);
}

void ReleasePolicy::Allowed(uint64_t offset) {
  allowed_ = std::max(allowed_, offset);
  while (!samples_.empty() && samples_.front() < allowed_) samples_.pop_front();
  due_ = false;
}

}  // namespace fingerprintd::source
