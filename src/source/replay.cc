// Replay: historical logs through the same parse -> rules -> correlate path as
// the live daemon, deployment by deployment.
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "fingerprintd/pipeline.h"
#include "fingerprintd/source.h"
#include "source/replay_reader.h"

namespace fingerprintd::source {
namespace {

// The --label k=v labels except `deployment`, which names the deployment.
std::map<std::string, std::string> StaticLabels(const ReplayOptions& options) {
  std::map<std::string, std::string> labels = options.labels;
  labels.erase("deployment");
  return labels;
}

// Replays `sources` (one deployment) in order through one Pipeline into
// `sink`. All sources are registered first, so a file not read yet holds the
// deployment's events until it has been read past their time.
Status ReplayGroup(const std::vector<const ReplaySource*>& sources, const ReplayOptions& options,
                   const std::shared_ptr<const rules::RuleSet>& rules, PipelineEvents& events,
                   correlate::IncidentSink& sink, const ProgressCallback& on_chunk,
                   ReplayStats* stats) {
  Pipeline::Options pipeline_options;
  pipeline_options.buffer_first = options.buffer_first;
  Pipeline pipeline(rules, pipeline_options, events, sink);
  std::vector<Pipeline::SourceId> ids;
  for (const ReplaySource* source : sources) {
    SourceSpec spec;
    spec.name = source->name;
    spec.deployment = source->deployment;
    spec.labels = StaticLabels(options);
    spec.parser = options.parser;
    if (!source->pieces.empty() && source->pieces.back() != "-") {
      spec.parser.mtime_us = FileMtimeMicros(source->pieces.back());
    }
    ids.push_back(pipeline.AddSource(spec));
  }
  Status first_error;
  for (size_t i = 0; i < sources.size(); ++i) {
    const Pipeline::SourceId id = ids[i];
    uint64_t offset = pipeline.NextPosition(id).offset;
    const uint64_t lines_before = stats->lines - pipeline.NextPosition(id).line;
    auto count_lines = [&] { stats->lines = lines_before + pipeline.NextPosition(id).line; };
    Status s = ReadPieces(
        *sources[i],
        [&](std::string_view buffer) {
          pipeline.Feed(id, buffer, offset);
          offset += buffer.size();
        },
        stats,
        [&](const ReplayStats& totals, const std::string& name) {
          pipeline.Advance(0);
          count_lines();
          if (on_chunk) on_chunk(totals, name);
        },
        options.read_chunk_bytes);
    pipeline.EndSource(id);
    count_lines();
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
  size_t threads = std::min<size_t>(std::max<size_t>(options.threads, 1), groups.size());
  if (threads <= 1) {
    // One deployment at a time, each with a fresh correlator: memory is
    // bounded by the largest deployment, not by the archive.
    Status first_error;
    for (const auto& group : groups) {
      Status s = ReplayGroup(group, options, rules, events, sink, options.progress, stats);
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
      errors[g] =
          ReplayGroup(groups[g], options, rules, events, locked, on_chunk, &thread_stats[t]);
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
  Pipeline::Options pipeline_options;
  pipeline_options.buffer_first = buffer_first;
  Pipeline pipeline(rules, pipeline_options, events, sink);
  SourceSpec spec;
  spec.name = name;
  spec.deployment = deployment;
  spec.parser = parser_options;
  const Pipeline::SourceId id = pipeline.AddSource(spec);
  pipeline.Feed(id, text, 0);
  pipeline.Finish();
}

}  // namespace fingerprintd::source
