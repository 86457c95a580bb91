// Pipeline (fingerprintd/pipeline.h): bytes -> lines [+ the buffer search] ->
// parse -> rules -> [held, canonical order] -> correlate, per source and per
// deployment.
//
// Per source a Tap sits between the parser and the engine (it sees every
// record's time: the source's floor) and between the engine and the
// correlator (it stamps every event with its key and holds it in the
// deployment's queue). The queue is ordered by (key time, source name,
// sequence); an event is released when no other source of the deployment can
// still produce an earlier key: its key is below the floor of every other
// source that holds the deployment. A source's own later events never have an
// earlier key, because keys are clamped to the source's floor.
#include "fingerprintd/pipeline.h"

#include <algorithm>

#include "pipeline/pipeline_impl.h"

namespace fingerprintd {

Pipeline::Pipeline(std::shared_ptr<const rules::RuleSet> rules, Options options,
                   PipelineEvents& events, correlate::IncidentSink& sink)
    : impl_(std::make_unique<Impl>(std::move(rules), options, events, sink)) {}

Pipeline::~Pipeline() = default;

Pipeline::SourceId Pipeline::AddSource(const SourceSpec& spec) { return impl_->Add(spec); }

void Pipeline::Feed(SourceId source, std::string_view bytes, uint64_t offset) {
  if (Impl::Source* s = impl_->Get(source)) impl_->Feed(*s, bytes, offset);
}

void Pipeline::EndLine(SourceId source) {
  if (Impl::Source* s = impl_->Get(source)) impl_->EndLine(*s);
}

void Pipeline::DropUnfinishedLine(SourceId source) {
  Impl::Source* s = impl_->Get(source);
  if (s != nullptr && s->lines.Drop()) impl_->events.LineDropped(DropReason::kCutAtDisconnect);
}

void Pipeline::EndSource(SourceId source) {
  if (Impl::Source* s = impl_->Get(source)) impl_->End(*s);
}

void Pipeline::ForgetSource(SourceId source) {
  Impl::Source* s = impl_->Get(source);
  if (s == nullptr) return;
  impl_->EndLine(*s);  // its last line is still a file's (Options::line_observer)
  s->spec.transient = true;
  impl_->End(*s);
}
void Pipeline::Advance(int64_t wall_now_us) { impl_->Advance(wall_now_us); }
void Pipeline::Finish() { impl_->Finish(); }

void Pipeline::ReportOpenIncidents(correlate::IncidentSink& sink) const {
  impl_->correlator.ReportOpen(sink);
}

SourcePosition Pipeline::SafePosition(SourceId source) const {
  const Impl::Source* s = impl_->Get(source);
  return s ? impl_->Safe(*s) : SourcePosition{};
}

SourcePosition Pipeline::NextPosition(SourceId source) const {
  const Impl::Source* s = impl_->Get(source);
  return s ? s->next : SourcePosition{};
}

size_t Pipeline::deployment_count() const { return impl_->deployments.size(); }

size_t Pipeline::source_count() const {
  return std::count_if(impl_->sources.begin(), impl_->sources.end(),
                       [](const auto& s) { return s != nullptr; });
}

const rules::RuleSet& Pipeline::rules() const { return *impl_->rules; }

uint64_t Pipeline::quiet_lines_skipped() const { return impl_->quiet_skipped; }

}  // namespace fingerprintd
