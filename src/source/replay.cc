// Replay: historical logs through the same parse -> rules -> correlate path as
// the live daemon, deployment by deployment.
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "fingerprintd/pipeline.h"
#include "fingerprintd/source.h"
#include "parse/atom_hints.h"
#include "parse/line_templates.h"
#include "rules/buffer_matcher.h"
#include "source/replay_reader.h"

namespace fingerprintd::source {
namespace {

// The --label k=v labels except `deployment`, which names the deployment.
std::map<std::string, std::string> StaticLabels(const ReplayOptions& options) {
  std::map<std::string, std::string> labels = options.labels;
  labels.erase("deployment");
  return labels;
}

// The whole-buffer matcher of the rule set's atoms and of the quiet-line
// triggers (parse/line_templates.h); null when the rule set has no atoms a
// search can vouch for.
std::shared_ptr<const rules::BufferMatcher> MatcherFor(const rules::RuleSet& rule_set) {
  const std::vector<std::string>& atoms = rule_set.Atoms();
  if (atoms.empty()) return nullptr;
  return rules::BufferMatcher::ForAtoms(parse::WithQuietLineTriggers(atoms));
}

// Buffer-first matching for one thread: the search of each read buffer for
// the atoms and the quiet-line triggers (MatcherFor), and the hints the
// parsers and pipeline read (null matcher: per-line path).
class BufferSearch {
 public:
  BufferSearch(const rules::BufferMatcher* matcher, const rules::RuleSet* rule_set)
      : matcher_(matcher != nullptr && matcher->ok() ? matcher : nullptr), rule_set_(rule_set) {
    if (matcher_ != nullptr) scratch_ = std::make_unique<rules::BufferMatcher::Scratch>(*matcher_);
    hints_.set_covers_quiet_triggers(true);
  }
  // What the parsers are given (ParserOptions::atom_hints).
  const parse::AtomHints* hints() const { return matcher_ != nullptr ? &hints_ : nullptr; }
  // Searches a buffer before its lines are fed. Where atoms are dense (about
  // one per line or more: every line a candidate, the worst case) the search
  // spares no per-line scan. The first kProbeBytes are searched first: when
  // they are dense, the buffer is not searched further and vouches for
  // nothing (its lines are parsed; the raw prefix path still applies). When
  // two buffers in a row are dense, the next kSkipAfterDense buffers are not
  // searched either (a worst case pays for 64 KiB of search per 9 MiB, not
  // 1 MiB). One dense buffer alone is a burst (a startup's config lines, a
  // crash's tracebacks): the next buffer is searched as usual, or the burst
  // would have every line of the next 9 MiB parsed.
  void Search(std::string_view buffer) {
    if (matcher_ == nullptr) return;
    if (skip_ > 0) {
      --skip_;
      hints_.Clear();
      return;
    }
    hints_.Reset(buffer, rule_set_);
    std::vector<size_t>* ends = hints_.mutable_ends();
    uint64_t* non_plain = hints_.mutable_non_plain();  // AtomHints::PlainAscii
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
  void Clear() { hints_.Clear(); }

 private:
  static constexpr size_t kDenseBytes = 256;  // an occurrence per 256 bytes or more
  static constexpr size_t kProbeBytes = 64 << 10;
  static constexpr int kSkipAfterDense = 8;
  const rules::BufferMatcher* matcher_;
  const rules::RuleSet* rule_set_;
  int skip_ = 0;
  bool dense_before_ = false;  // the last buffer searched was dense
  std::unique_ptr<rules::BufferMatcher::Scratch> scratch_;
  parse::AtomHints hints_;
};

// Replays `sources` (one deployment) in order through one Pipeline into
// `sink`. All sources are registered first, so a file not read yet holds the
// deployment's events until it has been read past their time.
Status ReplayGroup(const std::vector<const ReplaySource*>& sources, const ReplayOptions& options,
                   const std::shared_ptr<const rules::RuleSet>& rules,
                   const rules::BufferMatcher* matcher, PipelineEvents& events,
                   correlate::IncidentSink& sink, const ProgressCallback& on_chunk,
                   ReplayStats* stats) {
  Pipeline pipeline(rules, Pipeline::Options(), events, sink);
  BufferSearch search(matcher, rules.get());
  std::vector<Pipeline::SourceId> ids;
  for (const ReplaySource* source : sources) {
    SourceSpec spec;
    spec.name = source->name;
    spec.deployment = source->deployment;
    spec.labels = StaticLabels(options);
    spec.parser = options.parser;
    spec.parser.atom_hints = search.hints();
    if (!source->pieces.empty() && source->pieces.back() != "-") {
      spec.parser.mtime_us = FileMtimeMicros(source->pieces.back());
    }
    ids.push_back(pipeline.AddSource(spec));
  }
  Status first_error;
  for (size_t i = 0; i < sources.size(); ++i) {
    const Pipeline::SourceId id = ids[i];
    uint64_t offset = pipeline.NextPosition(id).offset;
    Status s = ReadPieces(
        *sources[i], options.parser.max_line_bytes, events,
        [&](std::string_view buffer) { search.Search(buffer); },
        [&](std::string_view line) {
          pipeline.Feed(id, line, offset);
          offset += line.size() + 1;
        },
        stats,
        [&](const ReplayStats& totals, const std::string& name) {
          pipeline.Advance(0);
          if (on_chunk) on_chunk(totals, name);
        },
        options.read_chunk_bytes);
    search.Clear();
    pipeline.EndSource(id);
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  pipeline.Finish();
  stats->lines_skipped += pipeline.quiet_lines_skipped();
  return first_error;
}

// Serialises incidents from several replay threads into the caller's sink.
class LockedSink final : public correlate::IncidentSink {
 public:
  explicit LockedSink(correlate::IncidentSink& next) : next_(next) {}
  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override {
    std::lock_guard<std::mutex> lock(mu_);
    next_.OnIncident(change, incident);
  }

 private:
  std::mutex mu_;
  correlate::IncidentSink& next_;
};

}  // namespace

// Correlation only needs the files of one deployment together, so each
// deployment is replayed through its own correlator, and with several threads
// each takes whole deployments from a shared queue. Incident ids do not depend
// on the thread and callers sort the final incidents, so the output is the
// same for any thread count.
Status Replay(const ReplayOptions& options, std::shared_ptr<const rules::RuleSet> rules,
              PipelineEvents& events, correlate::IncidentSink& sink, ReplayStats* stats) {
  StatusOr<std::vector<ReplaySource>> plan = PlanReplay(options);
  if (!plan.ok()) return plan.status();
  // Deployments in the order they first appear, each with its sources in order.
  std::vector<std::vector<const ReplaySource*>> groups;
  std::map<std::string, size_t> group_of;
  for (const ReplaySource& source : *plan) {
    auto [it, inserted] = group_of.emplace(source.deployment, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&source);
  }
  std::shared_ptr<const rules::BufferMatcher> shared_matcher;
  if (options.buffer_first) shared_matcher = MatcherFor(*rules);
  const rules::BufferMatcher* matcher = shared_matcher.get();
  size_t threads = std::min<size_t>(std::max<size_t>(options.threads, 1), groups.size());
  if (threads <= 1) {
    // One deployment at a time, each with a fresh correlator: memory is
    // bounded by the largest deployment, not by the archive.
    Status first_error;
    for (const auto& group : groups) {
      Status s = ReplayGroup(group, options, rules, matcher, events, sink, options.progress, stats);
      if (!s.ok() && first_error.ok()) first_error = s;
    }
    return first_error;
  }

  LockedSink locked(sink);
  std::mutex progress_mu;
  ReplayStats totals;
  std::atomic<size_t> next_group{0};
  std::vector<Status> errors(groups.size());
  std::vector<ReplayStats> thread_stats(threads);
  auto work = [&](size_t t) {
    ReplayStats reported;  // this thread's share already added to `totals`
    ProgressCallback on_chunk = [&](const ReplayStats& mine, const std::string& source) {
      std::lock_guard<std::mutex> lock(progress_mu);
      totals.bytes += mine.bytes - reported.bytes;
      totals.lines += mine.lines - reported.lines;
      totals.files += mine.files - reported.files;
      totals.input_bytes += mine.input_bytes - reported.input_bytes;
      reported = mine;
      if (options.progress) options.progress(totals, source);
    };
    for (size_t g = next_group++; g < groups.size(); g = next_group++) {
      errors[g] = ReplayGroup(groups[g], options, rules, matcher, events, locked, on_chunk,
                              &thread_stats[t]);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (std::thread& thread : pool) thread.join();
  for (const ReplayStats& s : thread_stats) {
    stats->files += s.files;
    stats->lines += s.lines;
    stats->bytes += s.bytes;
    stats->input_bytes += s.input_bytes;
    stats->lines_skipped += s.lines_skipped;
  }
  for (const Status& s : errors) {
    if (!s.ok()) return s;
  }
  return OkStatus();
}

void ReplayText(std::string_view text, const std::string& name, const std::string& deployment,
                const parse::ParserOptions& parser_options,
                std::shared_ptr<const rules::RuleSet> rules, PipelineEvents& events,
                correlate::IncidentSink& sink, bool buffer_first) {
  std::shared_ptr<const rules::BufferMatcher> matcher;
  if (buffer_first) matcher = MatcherFor(*rules);
  BufferSearch search(matcher.get(), rules.get());
  Pipeline pipeline(rules, Pipeline::Options(), events, sink);
  SourceSpec spec;
  spec.name = name;
  spec.deployment = deployment;
  spec.parser = parser_options;
  spec.parser.atom_hints = search.hints();
  const Pipeline::SourceId id = pipeline.AddSource(spec);
  LineSplitter splitter(parser_options.max_line_bytes, events);
  auto on_line = [&](std::string_view line) {
    pipeline.Feed(id, line, pipeline.NextPosition(id).offset);
  };
  search.Search(text);
  splitter.Append(text, on_line);
  splitter.Finish(on_line);
  search.Clear();
  pipeline.Finish();
}

}  // namespace fingerprintd::source
