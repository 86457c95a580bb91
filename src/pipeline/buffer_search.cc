#include "pipeline/buffer_search.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "parse/line_templates.h"

namespace fingerprintd::pipeline_detail {
namespace {

// An occurrence per kDenseBytes or more: a dense buffer.
constexpr size_t kDenseBytes = 256;
constexpr size_t kProbeBytes = 64 << 10;
constexpr int kSkipAfterDense = 8;

// The whole-buffer matcher of the rule set's atoms and of the quiet-line
// triggers, compiled once per rule set and shared while the rule set lives
// (a replay makes a pipeline per deployment; a reload brings a new rule
// set). Null when the rule set has no atoms, or the matcher did not build.
std::shared_ptr<const rules::BufferMatcher> MatcherFor(
    const std::shared_ptr<const rules::RuleSet>& rule_set) {
  static std::mutex mu;
  static std::map<const rules::RuleSet*, std::pair<std::weak_ptr<const rules::RuleSet>,
                                                   std::shared_ptr<const rules::BufferMatcher>>>
      cache;
  std::lock_guard<std::mutex> lock(mu);
  std::erase_if(cache, [](const auto& entry) { return entry.second.first.expired(); });
  auto it = cache.find(rule_set.get());
  if (it != cache.end()) return it->second.second;
  std::shared_ptr<const rules::BufferMatcher> matcher;
  const std::vector<std::string>& atoms = rule_set->Atoms();
  if (!atoms.empty()) {
    matcher = rules::BufferMatcher::ForAtoms(parse::WithQuietLineTriggers(atoms));
    if (matcher != nullptr && !matcher->ok()) matcher = nullptr;
  }
  cache.emplace(rule_set.get(),
                std::make_pair(std::weak_ptr<const rules::RuleSet>(rule_set), matcher));
  return matcher;
}

}  // namespace

BufferSearch::BufferSearch(const std::shared_ptr<const rules::RuleSet>& rule_set)
    : matcher_(MatcherFor(rule_set)), rule_set_(rule_set.get()) {
  if (matcher_ != nullptr) scratch_ = std::make_unique<rules::BufferMatcher::Scratch>(*matcher_);
  hints_.set_covers_quiet_triggers(true);
}

// Where atoms are dense (about one per line or more: every line a candidate,
// the worst case) the search spares no per-line scan. The first kProbeBytes
// are searched first: when they are dense, the buffer is not searched further
// and vouches for nothing (its lines are parsed; the raw prefix path still
// applies). When two buffers in a row are dense, the next kSkipAfterDense
// buffers are not searched either (a worst case pays for 64 KiB of search per
// 9 MiB, not 1 MiB). One dense buffer alone is a burst (a startup's config
// lines, a crash's tracebacks): the next buffer is searched as usual, or the
// burst would have every line of the next 9 MiB parsed.
void BufferSearch::Search(std::string_view buffer) {
  if (matcher_ == nullptr) return;
  if (skip_ > 0) {
    --skip_;
    hints_.Clear();
    return;
  }
  hints_.Reset(buffer, rule_set_);
  std::vector<size_t>* ends = hints_.mutable_ends();
  uint64_t* non_plain = hints_.mutable_non_plain();  // BufferHints::PlainAscii
  const size_t probe = std::min(buffer.size(), kProbeBytes);
  if (!matcher_->Search(buffer.substr(0, probe), ends, scratch_.get(), non_plain)) {
    hints_.Clear();  // vouch for nothing in this buffer
    return;
  }
  if (probe < buffer.size()) {
    if (ends->size() * kDenseBytes > probe) {
      if (dense_before_) skip_ = kSkipAfterDense;
      dense_before_ = true;
      hints_.Clear();
      return;
    }
    // The rest, overlapping the probe by an atom's length less one (or
    // more): an occurrence ending past the probe lies wholly in it. From a
    // multiple of 64, so that its bitmap of non-plain bytes is the buffer's
    // from word from / 64 on (the overlap's bits are set again, the same).
    const size_t from = (probe - std::min(probe, matcher_->longest() - 1)) / 64 * 64;
    const size_t before = ends->size();
    if (!matcher_->Search(buffer.substr(from), ends, scratch_.get(), non_plain + from / 64)) {
      hints_.Clear();
      return;
    }
    for (size_t i = before; i < ends->size(); ++i) (*ends)[i] += from;
  }
  const bool dense = ends->size() * kDenseBytes > buffer.size();
  if (dense && dense_before_) skip_ = kSkipAfterDense;
  dense_before_ = dense;
  hints_.Seal();
}

}  // namespace fingerprintd::pipeline_detail
