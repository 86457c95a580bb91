// Pipeline (fingerprintd/pipeline.h): parse -> rules -> [held, canonical
// order] -> correlate, per source and per deployment.
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
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <vector>

#include "correlate/correlator_state.h"

namespace fingerprintd {
namespace {

constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr int kPipelineStateVersion = 1;
// A source's parser and engine are ticked when its event time moved on by this.
constexpr int64_t kTickEvery = 1'000'000;

// The line of the symptom stage of a hit (the line that decided it).
uint64_t SymptomLine(const rules::RuleHit& hit) {
  const rules::Stage& symptom = hit.rule->stages[hit.rule->symptom_stage];
  for (const rules::EvidenceLine& e : hit.stages) {
    if (e.stage == symptom.id) return e.line;
  }
  return hit.stages.empty() ? 0 : hit.stages.back().line;
}

}  // namespace

struct Pipeline::Impl {
  struct Source;
  struct Deployment;

  enum class Kind : uint8_t { kHit, kFact, kWorkerSeen, kWorkerRank };

  struct Held {
    Kind kind = Kind::kHit;
    uint32_t source = 0;
    rules::RuleHit hit;
    std::string name, value;  // kFact
    WorkerInfo worker;        // kWorkerSeen / kWorkerRank
    int64_t arrival_wall = 0;
  };
  // (key time, source name, sequence within the source)
  using HeldKey = std::tuple<int64_t, std::string, uint64_t>;

  // Between the parser and the engine, and between the engine and the queue.
  class Tap final : public parse::RecordSink, public rules::HitSink {
   public:
    Tap(Impl& impl, Source& source) : impl_(impl), source_(source) {}
    void OnRecord(const LogRecord& record) override {
      if (record.time_us != 0 && record.time_us > source_.floor) source_.floor = record.time_us;
      source_.engine->OnRecord(record);
    }
    void OnTraceback(const Traceback& traceback) override {
      source_.engine->OnTraceback(traceback);
    }
    void OnStreamForgotten(const WorkerInfo& worker) override {
      source_.engine->OnStreamForgotten(worker);
    }
    void OnHit(rules::RuleHit hit) override {
      const uint64_t line = SymptomLine(hit);
      if (!source_.reported.emplace(line, hit.rule->id).second) return;  // re-read after restore
      Held h;
      h.kind = Kind::kHit;
      const int64_t time = hit.time_us;
      h.hit = std::move(hit);
      impl_.Hold(source_, time, std::move(h));
    }
    void OnFact(uint32_t, const std::string& name, const std::string& value) override {
      Held h;
      h.kind = Kind::kFact;
      h.name = name;
      h.value = value;
      impl_.Hold(source_, kNoTime, std::move(h));
    }
    void OnWorkerSeen(uint32_t, const WorkerInfo& worker) override {
      Held h;
      h.kind = Kind::kWorkerSeen;
      h.worker = worker;
      impl_.Hold(source_, kNoTime, std::move(h));
    }
    void OnWorkerRank(uint32_t, const WorkerInfo& worker) override {
      Held h;
      h.kind = Kind::kWorkerRank;
      h.worker = worker;
      impl_.Hold(source_, kNoTime, std::move(h));
    }

   private:
    Impl& impl_;
    Source& source_;
  };

  struct Source {
    SourceSpec spec;
    uint32_t id = 0;
    Deployment* deployment = nullptr;
    std::unique_ptr<Tap> tap;
    std::unique_ptr<rules::RuleEngine> engine;
    std::unique_ptr<parse::SourceParser> parser;
    bool ended = false;
    int64_t floor = kNoTime;   // highest event time read
    int64_t ticked = kNoTime;  // floor at the last Tick of its parser and engine
    uint64_t seq = 0;          // events produced
    SourcePosition next;
    int64_t last_line_wall = 0;  // wall time of the first Advance after its latest line
    bool fed_since_advance = false;
    // (symptom line, rule) of hits already produced: after a restart the
    // lines from the safe position on are read again, and a hit they had
    // produced before the cut is not produced twice.
    std::set<std::pair<uint64_t, std::string>> reported;
  };

  struct Deployment {
    std::string name;
    std::vector<Source*> sources;
    std::map<HeldKey, Held> held;
    int64_t clock = kNoTime;  // latest time of a released hit: the correlator's event clock
  };

  Impl(std::shared_ptr<const rules::RuleSet> r, Options o, PipelineEvents& e,
       correlate::IncidentSink& s)
      : rules(std::move(r)), options(o), events(e), correlator(rules, e, s, o.correlator) {}

  void Start(Source& s) {
    s.tap = std::make_unique<Tap>(*this, s);
    // The parser bounds the stream ids (recycling past max_workers); the
    // engine must take every one of them, the unprefixed stream included.
    rules::RuleEngine::Options engine_options = options.engine;
    engine_options.max_streams =
        std::max(engine_options.max_streams, s.spec.parser.max_workers + 1);
    s.engine = std::make_unique<rules::RuleEngine>(rules, s.id, events, *s.tap, engine_options);
    s.parser =
        std::make_unique<parse::SourceParser>(s.id, s.spec.name, s.spec.parser, events, *s.tap);
    s.parser->Seek(s.next.offset, s.next.line);
    s.ended = false;
  }

  void Hold(Source& s, int64_t time, Held h) {
    const int64_t key = std::max(time, s.floor);
    h.source = s.id;
    ++held_count;
    s.deployment->held.emplace(HeldKey{key, s.spec.name, s.seq++}, std::move(h));
  }

  // Whether a source keeps its deployment from releasing events past its floor.
  bool Holds(const Source& s, int64_t wall_now) const {
    if (s.ended) return false;
    return wall_now == 0 || wall_now - s.last_line_wall <= options.idle_source_after_us;
  }

  void Deliver(Deployment& d, const HeldKey& key, Held& h) {
    --held_count;
    switch (h.kind) {
      case Kind::kHit:
        // The correlator's clock is the latest hit time released: windows
        // that ended before this hit cannot take it, so they are closed
        // first. (The key may be much later than the hit's time, for a
        // symptom decided long after it was written; closing by the key
        // would close the very incident the hit belongs to.)
        if (h.hit.time_us > d.clock) {
          d.clock = h.hit.time_us;
          correlator.AdvanceDeployment(d.name, d.clock);
        }
        correlator.OnHit(std::move(h.hit));
        break;
      case Kind::kFact:
        correlator.OnFact(h.source, h.name, h.value);
        break;
      case Kind::kWorkerSeen:
        correlator.OnWorkerSeen(h.source, h.worker);
        break;
      case Kind::kWorkerRank:
        correlator.OnWorkerRank(h.source, h.worker);
        break;
    }
  }

  // Releases, in key order, the events no source of `d` can still precede.
  // With a wall clock, an event held longer than max_hold goes anyway.
  void Release(Deployment& d, int64_t wall_now, bool everything) {
    int64_t min1 = kNever, min2 = kNever;
    uint32_t argmin1 = UINT32_MAX;
    for (const Source* s : d.sources) {
      if (!Holds(*s, wall_now)) continue;
      if (s->floor < min1) {
        min2 = min1;
        min1 = s->floor;
        argmin1 = s->id;
      } else if (s->floor < min2) {
        min2 = s->floor;
      }
    }
    while (!d.held.empty()) {
      auto it = d.held.begin();
      const int64_t bound = it->second.source == argmin1 ? min2 : min1;
      const bool overdue = wall_now != 0 && it->second.arrival_wall != 0 &&
                           wall_now - it->second.arrival_wall > options.max_hold_us;
      const bool over_cap = held_count > options.max_held_events;
      if (!everything && std::get<0>(it->first) >= bound && !overdue && !over_cap) break;
      if (over_cap) events.LineDropped(DropReason::kStateEvicted);
      auto node = d.held.extract(it);
      Deliver(d, node.key(), node.mapped());
    }
  }

  // The deployment's event time for closing windows on a wall clock: its
  // slowest holding source, else its latest source extrapolated by the wall
  // time since that source's last line.
  int64_t LiveEventTime(const Deployment& d, int64_t wall_now) const {
    int64_t slowest = kNever, latest = kNoTime;
    for (const Source* s : d.sources) {
      if (s->floor == kNoTime) continue;
      if (Holds(*s, wall_now)) slowest = std::min(slowest, s->floor);
      latest = std::max(latest, s->floor + std::max<int64_t>(0, wall_now - s->last_line_wall));
    }
    return slowest != kNever ? slowest : latest;
  }

  void Feed(Source& s, std::string_view line, uint64_t offset) {
    if (s.ended) Start(s);
    if (offset != s.next.offset) s.parser->Seek(offset, s.next.line);
    s.next.offset = offset + line.size() + 1;
    ++s.next.line;
    s.fed_since_advance = true;
    s.parser->Feed(line);
    if (s.floor != kNoTime && (s.ticked == kNoTime || s.floor - s.ticked >= kTickEvery)) {
      // Event time moved on: decide what waited too long in the source's
      // other streams (a symptom whose process never wrote again, a
      // traceback left open). Driven by the source's own lines only, so the
      // same for any interleaving; the parser gets a timeout's margin, so a
      // chained traceback is not cut by another stream's next line.
      s.ticked = s.floor;
      s.parser->Tick(s.floor - s.spec.parser.traceback_timeout_us);
      s.engine->Tick(s.floor);
    }
    if (!s.deployment->held.empty()) Release(*s.deployment, last_wall, false);
  }

  void End(Source& s) {
    if (s.ended) return;
    s.parser->Finish();
    s.engine->Finish();
    s.parser.reset();
    s.engine.reset();
    s.tap.reset();
    s.ended = true;
    Release(*s.deployment, last_wall, false);
  }

  void Advance(int64_t wall_now) {
    last_wall = wall_now;
    for (auto& s : sources) {
      if (s->fed_since_advance) {
        s->last_line_wall = wall_now;
        s->fed_since_advance = false;
      }
      if (wall_now != 0 && !s->ended && s->floor != kNoTime) {
        // Live: a quiet source's event time moves on with the wall clock, so
        // a traceback or symptom that was its last output is still decided.
        const int64_t now = s->floor + std::max<int64_t>(0, wall_now - s->last_line_wall);
        s->parser->Tick(now);
        s->engine->Tick(now);
      }
    }
    for (auto& [name, d] : deployments) {
      for (auto& [key, h] : d->held) {
        if (h.arrival_wall == 0) h.arrival_wall = wall_now;
      }
      Release(*d, wall_now, false);
      if (wall_now != 0) {
        const int64_t now = LiveEventTime(*d, wall_now);
        if (now != kNoTime && now != kNever) correlator.AdvanceDeployment(name, now);
      }
    }
  }

  void Finish() {
    for (auto& s : sources) End(*s);
    for (auto& [name, d] : deployments) Release(*d, 0, true);
    correlator.Finish();
  }

  SourcePosition Safe(const Source& s) const {
    // Filled in by the checkpoint work: the parser's and engine's oldest
    // needed lines. Until then, the next line.
    return s.next;
  }

  std::shared_ptr<const rules::RuleSet> rules;
  Options options;
  PipelineEvents& events;
  correlate::Correlator correlator;
  std::vector<std::unique_ptr<Source>> sources;  // index = SourceId = correlator source id
  std::map<std::string, uint32_t> source_ids;
  std::map<std::string, std::unique_ptr<Deployment>> deployments;
  size_t held_count = 0;
  int64_t last_wall = 0;
};

Pipeline::Pipeline(std::shared_ptr<const rules::RuleSet> rules, Options options,
                   PipelineEvents& events, correlate::IncidentSink& sink)
    : impl_(std::make_unique<Impl>(std::move(rules), options, events, sink)) {}

Pipeline::~Pipeline() = default;

Pipeline::SourceId Pipeline::AddSource(const SourceSpec& spec) {
  auto found = impl_->source_ids.find(spec.name);
  if (found != impl_->source_ids.end()) return found->second;
  auto source = std::make_unique<Impl::Source>();
  source->spec = spec;
  source->id = impl_->correlator.AddSource(spec.name, spec.deployment, spec.labels);
  source->next = spec.start;
  auto& d = impl_->deployments[spec.deployment];
  if (!d) {
    d = std::make_unique<Impl::Deployment>();
    d->name = spec.deployment;
  }
  source->deployment = d.get();
  d->sources.push_back(source.get());
  impl_->Start(*source);
  impl_->source_ids.emplace(spec.name, source->id);
  impl_->sources.push_back(std::move(source));
  return impl_->sources.back()->id;
}

void Pipeline::Feed(SourceId source, std::string_view line, uint64_t offset) {
  impl_->Feed(*impl_->sources.at(source), line, offset);
}

void Pipeline::EndSource(SourceId source) { impl_->End(*impl_->sources.at(source)); }
void Pipeline::Advance(int64_t wall_now_us) { impl_->Advance(wall_now_us); }
void Pipeline::Finish() { impl_->Finish(); }

SourcePosition Pipeline::SafePosition(SourceId source) const {
  return impl_->Safe(*impl_->sources.at(source));
}

SourcePosition Pipeline::NextPosition(SourceId source) const {
  return impl_->sources.at(source)->next;
}

std::string Pipeline::SaveState() const {
  using nlohmann::json;
  json state = {{"version", kPipelineStateVersion},
                {"correlator", json::parse(impl_->correlator.SaveState())}};
  return state.dump();
}

Status Pipeline::RestoreState(const std::string& text) {
  using nlohmann::json;
  try {
    json state = json::parse(text);
    if (state.at("version").get<int>() != kPipelineStateVersion) {
      return DataLossError("pipeline state: unsupported version " + state.at("version").dump());
    }
    return impl_->correlator.RestoreState(state.at("correlator").dump());
  } catch (const json::exception& e) {
    return DataLossError(std::string("pipeline state: ") + e.what());
  }
}

const rules::RuleSet& Pipeline::rules() const { return *impl_->rules; }

}  // namespace fingerprintd
