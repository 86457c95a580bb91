// Pipeline::Impl: the pipeline's state and its per-line work, shared by
// pipeline.cc (the public calls) and pipeline_state.cc (what a checkpoint
// keeps: Save, Restore). Private to src/pipeline/; see
// include/fingerprintd/pipeline.h for the contract and pipeline.cc for how
// events are held and released.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <vector>

#include "common/line_splitter.h"
#include "common/state_json.h"
#include "common/utf8.h"
#include "correlate/correlator_state.h"
#include "fingerprintd/pipeline.h"
#include "parse/source_parser_fast_path.h"
#include "pipeline/buffer_search.h"
#include "rules/atom_set.h"
#include "rules/engine_fast_path.h"

namespace fingerprintd {
namespace pipeline_detail {

inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
inline constexpr int kPipelineStateVersion = 1;
// Clock changes remembered per source since its safe position (one per
// second of log time when lines carry whole seconds).
inline constexpr size_t kMaxClocks = 65536;
// PruneReported's pass is not run for fewer clocks and reported lines. The
// clocks alone never reach twice kMaxClocks: at the cap (CRI envelopes move
// the floor on every line) only new reported lines bring the next pass.
inline constexpr size_t kPruneAtLeast = 64;
// A source's parser and engine are ticked when its event time moved on by this.
inline constexpr int64_t kTickEvery = 1'000'000;

// The line of the symptom stage of a hit (the line that decided it).
inline uint64_t SymptomLine(const rules::RuleHit& hit) {
  const rules::Stage& symptom = hit.rule->stages[hit.rule->symptom_stage];
  for (const rules::EvidenceLine& e : hit.stages) {
    if (e.stage == symptom.id) return e.line;
  }
  return hit.stages.empty() ? 0 : hit.stages.back().line;
}

// The prefilter's RE2::Set counts the lines it had to search atom by atom
// (out of DFA memory) process-wide (rules/atom_set.h); each is reported once,
// as evictions_total{what="prefilter_fallback"}, by whichever pipeline ticks
// first.
inline void ReportPrefilterFallbacks(PipelineEvents& events) {
  static std::atomic<uint64_t> reported{0};
  const uint64_t now = rules::AtomSet::FallbackCount();
  uint64_t before = reported.load(std::memory_order_relaxed);
  while (before < now && !reported.compare_exchange_weak(before, now)) {
  }
  for (; before < now; ++before) events.StateEvicted(Evicted::kPrefilterFallback);
}

}  // namespace pipeline_detail
using namespace pipeline_detail;  // NOLINT(build/namespaces): the two files of this unit

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
  // Takes the quiet lines the fast path offers (parse::QuietLineTaker).
  class Tap final : public parse::RecordSink, public rules::HitSink, public parse::QuietLineTaker {
   public:
    Tap(Impl& impl, Source& source) : impl_(impl), source_(source) {}
    void OnRecord(const LogRecord& record) override {
      MoveFloor(record.time_us);
      source_.engine->OnRecord(record);
    }
    bool TakeQuietLine(const WorkerInfo& worker, int64_t time_us) override {
      if (!rules::RuleEngine::FastPath::AbsorbQuietRecord(*source_.engine, worker)) return false;
      MoveFloor(time_us);
      ++impl_.quiet_skipped;
      return true;
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
    void MoveFloor(int64_t time_us) {
      if (time_us != 0 && time_us > source_.floor) source_.floor = time_us;
    }

    Impl& impl_;
    Source& source_;
  };

  struct Source {
    Source(size_t max_line_bytes, PipelineEvents& events) : lines(max_line_bytes, events) {}
    SourceSpec spec;
    uint32_t id = 0;
    // Feed's bytes become lines here; the unfinished last line waits in it.
    LineSplitter lines;
    // Live: the unfinished line's start when Advance first saw it waiting,
    // and the wall time then (Options::partial_line_timeout_us).
    uint64_t waiting_line = UINT64_MAX;
    int64_t waiting_since_wall = 0;
    Deployment* deployment = nullptr;
    std::unique_ptr<Tap> tap;
    std::unique_ptr<rules::RuleEngine> engine;
    std::unique_ptr<parse::SourceParser> parser;
    bool ended = false;
    int64_t floor = kNoTime;   // highest event time read
    int64_t ticked = kNoTime;  // floor at the last Tick of its parser and engine
    // (lines before, floor, ticked) at each change of floor or ticked since
    // the safe position: a restart reading again from the safe position
    // starts from the clock it had there, so it decides exactly as before.
    struct Clock {
      uint64_t line;
      int64_t floor, ticked;
    };
    std::deque<Clock> clocks;
    // floor and ticked when AfterLine() last ran (settled: it has run since
    // they were last set otherwise and nothing was held since): a line that
    // moved neither and held nothing gives it nothing to do.
    bool settled = false;
    int64_t settled_floor = kNoTime, settled_ticked = kNoTime;
    uint64_t seq = 0;  // events produced
    SourcePosition next;
    int64_t last_line_wall = 0;  // wall time of the first Advance after its latest line
    bool fed_since_advance = false;
    // (symptom line, rule) of hits already produced: after a restart the
    // lines from the safe position on are read again, and a hit they had
    // produced before the cut is not produced twice.
    std::set<std::pair<uint64_t, std::string>> reported;
    // PruneReported's pass runs once clocks and reported hold this many:
    // twice what the last pass kept, so its cost is spread over the entries
    // added, not paid on every Advance (kPruneAtLeast).
    size_t prune_at = 0;
  };

  struct Deployment {
    std::string name;
    std::vector<Source*> sources;
    std::map<HeldKey, Held> held;
    int64_t clock = kNoTime;  // latest time of a released hit: the correlator's event clock
    // The latest floor of its forgotten sources, and the wall time of their
    // last line: with every source gone, its open incidents still close on
    // time (event time extrapolated by the wall clock).
    int64_t gone_floor = kNoTime;
    int64_t gone_wall = 0;
  };

  Impl(std::shared_ptr<const rules::RuleSet> r, Options o, PipelineEvents& e,
       correlate::IncidentSink& s)
      : rules(std::move(r)), options(o), events(e), correlator(rules, e, s, o.correlator) {
    if (options.buffer_first) search = std::make_unique<BufferSearch>(rules);
  }

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
    if (search != nullptr && search->hints() != nullptr) {
      parse::SourceParser::FastPath::Use(*s.parser, search->hints(), s.tap.get());
    }
    s.parser->Seek(s.next.offset, s.next.line);
    s.ended = false;
  }

  void Hold(Source& s, int64_t time, Held h) {
    s.settled = false;  // AfterLine releases what it lets go
    const int64_t key = std::max(time, s.floor);
    h.source = s.id;
    ++held_count;
    s.deployment->held.emplace(HeldKey{key, s.spec.name, s.seq++}, std::move(h));
  }

  // Whether a source keeps its deployment from releasing events past its floor.
  bool Holds(const Source& s, int64_t wall_now) const {
    if (s.ended) return false;
    const int64_t idle =
        s.spec.read_as_written ? options.caught_up_after_us : options.idle_source_after_us;
    return wall_now == 0 || wall_now - s.last_line_wall <= idle;
  }

  void Deliver(Deployment& d, Held& h) {
    --held_count;
    switch (h.kind) {
      case Kind::kHit:
        // The correlator's clock is the latest hit time released: windows
        // that ended before this hit cannot take it, so they are closed
        // first. (The key may be much later than the hit's time, for a
        // symptom decided long after it was written; closing by the key
        // would close the very incident the hit belongs to.)
        // A start line moves no window: the failures of the attempt before
        // it, decided late (a traceback completed by the next start's first
        // line), must still find the incidents they belong to.
        if (h.hit.time_us > d.clock && h.hit.rule->kind != rules::RuleKind::kStart) {
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
      if (over_cap) events.StateEvicted(Evicted::kHeldEvent);
      auto node = d.held.extract(it);
      Deliver(d, node.mapped());
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
    if (d.gone_floor != kNoTime) {
      latest = std::max(latest, d.gone_floor + std::max<int64_t>(0, wall_now - d.gone_wall));
    }
    return slowest != kNever ? slowest : latest;
  }

  // Pipeline::Feed: bytes -> lines (s.lines), each buffer searched first.
  void Feed(Source& s, std::string_view bytes, uint64_t offset) {
    if (offset != s.lines.end()) {  // a gap: the unfinished line ends where its bytes stop
      EndLine(s);
      s.lines.Restart(offset);
    }
    // Only a line that ends inside the bytes can be vouched for: bytes
    // without a '\n' (a socket frame, a line written in pieces) are not
    // searched.
    const bool searched =
        search != nullptr && std::memchr(bytes.data(), '\n', bytes.size()) != nullptr;
    if (searched) search->Search(bytes);
    s.lines.Append(bytes, [&](std::string_view line, uint64_t start) { FeedLine(s, line, start); });
    if (searched) search->Clear();
  }

  void EndLine(Source& s) {
    s.lines.Finish([&](std::string_view line, uint64_t start) { FeedLine(s, line, start); });
  }

  void FeedLine(Source& s, std::string_view line, uint64_t offset) {
    if (s.ended) Start(s);
    if (offset != s.next.offset) s.parser->Seek(offset, s.next.line);
    s.next.offset = offset + line.size() + 1;
    ++s.next.line;
    s.fed_since_advance = true;
    if (options.line_observer) options.line_observer(s.spec, line, offset);
    s.parser->Feed(line);
    AfterLine(s);
  }

  // Live: an unfinished line that waited partial_line_timeout_us of wall
  // time for its '\n' is handed on as it is. One cut at the cap waits for its
  // '\n' (or the end of the source): the rest of it is still to be skipped.
  void EndWaitingLine(Source& s, int64_t wall_now) {
    if (!s.lines.mid_line() || s.lines.cutting()) return;
    if (s.waiting_line != s.lines.line_start()) {
      s.waiting_line = s.lines.line_start();
      s.waiting_since_wall = wall_now;
    } else if (wall_now - s.waiting_since_wall >= options.partial_line_timeout_us) {
      EndLine(s);
    }
  }

  // After a line: ticks when its time moved the floor on, and releases what
  // it let go. Nothing to do when neither moved nor anything was held since
  // it last ran: every other change of the held events, floors or wall clock
  // is followed by a Release() of its own.
  void AfterLine(Source& s) {
    if (s.settled && s.floor == s.settled_floor && s.ticked == s.settled_ticked) return;
    if (s.floor != kNoTime && (s.ticked == kNoTime || s.floor - s.ticked >= kTickEvery)) {
      // Event time moved on: decide what waited too long in the source's
      // other streams (a symptom whose process never wrote again, a
      // traceback left open). Driven by the source's own lines only, so the
      // same for any interleaving; the parser gets a timeout's margin, so a
      // chained traceback is not cut by another stream's next line.
      s.ticked = s.floor;
      s.parser->Tick(s.floor - s.spec.parser.traceback_timeout_us);
      s.engine->Tick(s.floor);
      s.engine->ForgetExpiredStages(s.floor);
      ReportPrefilterFallbacks(events);
    }
    if (s.clocks.empty() || s.clocks.back().floor != s.floor ||
        s.clocks.back().ticked != s.ticked) {
      if (s.clocks.size() >= kMaxClocks) s.clocks.pop_front();  // coarser, never wrong-way
      s.clocks.push_back({s.next.line, s.floor, s.ticked});
    }
    if (!s.deployment->held.empty()) Release(*s.deployment, last_wall, false);
    s.settled = true;
    s.settled_floor = s.floor;
    s.settled_ticked = s.ticked;
  }

  void End(Source& s) {
    EndLine(s);
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
      if (!s) continue;  // forgotten
      PruneReported(*s);
      // A source restored from a checkpoint has a floor but no wall time of
      // its last line (wall times are not saved): its silent spell starts at
      // the first Advance, not at the epoch, or its event time would jump
      // decades ahead and close every restored incident before the lines a
      // restarted daemon re-reads, or a shipper resends, arrive.
      if (s->fed_since_advance || (s->last_line_wall == 0 && s->floor != kNoTime)) {
        s->last_line_wall = wall_now;
        s->fed_since_advance = false;
      }
      if (wall_now != 0) EndWaitingLine(*s, wall_now);
      if (wall_now != 0 && !s->ended && s->floor != kNoTime) {
        // Live: a silent source's event time moves on with the wall clock, so
        // a traceback or symptom that was its last output is still decided.
        const int64_t now = s->floor + std::max<int64_t>(0, wall_now - s->last_line_wall);
        s->parser->Tick(now);
        s->engine->Tick(now);
      }
    }
    for (auto it = deployments.begin(); it != deployments.end();) {
      Deployment& d = *it->second;
      for (auto& [key, h] : d.held) {
        if (h.arrival_wall == 0) h.arrival_wall = wall_now;
      }
      if (d.gone_floor != kNoTime && d.gone_wall == 0) d.gone_wall = wall_now;  // restored
      Release(d, wall_now, false);
      if (wall_now != 0) {
        const int64_t now = LiveEventTime(d, wall_now);
        if (now != kNoTime && now != kNever) correlator.AdvanceDeployment(it->first, now);
      }
      ForgetEnded(d);
      const bool gone =
          d.sources.empty() && d.held.empty() && !correlator.RemembersDeployment(it->first);
      it = gone ? deployments.erase(it) : std::next(it);
    }
  }

  // Frees the deployment's ended transient sources that have no event held:
  // the pipeline and the correlator forget their names, and their ids go to
  // later sources.
  void ForgetEnded(Deployment& d) {
    auto forgettable = [](const Source* s) { return s->ended && s->spec.transient; };
    if (std::none_of(d.sources.begin(), d.sources.end(), forgettable)) return;
    std::set<uint32_t> holding;
    for (const auto& [key, h] : d.held) holding.insert(h.source);
    std::erase_if(d.sources, [&](const Source* s) {
      if (!forgettable(s) || holding.count(s->id) != 0) return false;
      const uint32_t id = s->id;
      if (auto name = source_ids.find(s->spec.name);
          name != source_ids.end() && name->second == id) {
        source_ids.erase(name);
      }
      correlator.ForgetSource(id);
      if (s->floor != kNoTime) {
        d.gone_floor = std::max(d.gone_floor, s->floor);
        d.gone_wall = std::max(d.gone_wall, s->last_line_wall);
      }
      sources[id].reset();
      return true;
    });
  }

  void Finish() {
    for (auto& s : sources) {
      if (s) End(*s);
    }
    for (auto& [name, d] : deployments) Release(*d, 0, true);
    correlator.Finish();
  }

  SourcePosition Safe(const Source& s) const {
    SourcePosition pos = s.next;
    if (s.ended) return pos;
    s.parser->LowestHeld(&pos);
    s.engine->LowestNeeded(&pos);
    return pos;
  }

  // Symptom lines before the safe position will not be read again, nor are
  // the clocks before it needed. Safe() visits all the parser and the engine
  // hold (thousands of stage matches in a long log), so this runs once the
  // two have doubled since the last pass.
  void PruneReported(Source& s) {
    if (s.clocks.size() + s.reported.size() < s.prune_at) return;
    const uint64_t safe_line = Safe(s).line;
    auto first_kept = s.reported.lower_bound({safe_line + 1, std::string()});
    s.reported.erase(s.reported.begin(), first_kept);
    while (s.clocks.size() > 1 && s.clocks[1].line <= safe_line) s.clocks.pop_front();
    if (s.parser) s.parser->ForgetTimesBefore(safe_line);
    s.prune_at = std::max(kPruneAtLeast, 2 * (s.clocks.size() + s.reported.size()));
  }

  // The source's clock when the line after `pos` was about to be read.
  static std::pair<int64_t, int64_t> ClockAt(const Source& s, const SourcePosition& pos) {
    std::pair<int64_t, int64_t> at{kNoTime, kNoTime};
    for (const auto& c : s.clocks) {
      if (c.line > pos.line) break;
      at = {c.floor, c.ticked};
    }
    return at;
  }

  nlohmann::json Save() const;
  Status Restore(const nlohmann::json& state, const Pipeline::RestoredSpec& restored_spec);

  // Ids come from the correlator, which hands a forgotten source's id to a
  // later source once nothing refers to it. Names, the deployment and labels
  // are kept as valid UTF-8 (common/utf8.h): a file path or a shipper's pod
  // name may hold any byte, and they reach the state, incidents and alerts.
  uint32_t Add(const SourceSpec& given) {
    SourceSpec spec = given;
    spec.name = EscapeInvalidUtf8(given.name);
    spec.deployment = EscapeInvalidUtf8(given.deployment);
    spec.labels.clear();
    for (const auto& [key, value] : given.labels) {
      spec.labels.emplace(EscapeInvalidUtf8(key), EscapeInvalidUtf8(value));
    }
    auto found = source_ids.find(spec.name);
    if (found != source_ids.end()) return found->second;
    auto& d = deployments[spec.deployment];
    if (!d) {
      d = std::make_unique<Deployment>();
      d->name = spec.deployment;
    }
    auto source = std::make_unique<Source>(spec.parser.max_line_bytes, events);
    source->spec = spec;
    if (const auto& limits = options.source_limits) {
      parse::ParserOptions& parser = source->spec.parser;
      parser.max_workers = limits->max_process_streams;
      parser.max_traceback_frames = limits->max_traceback_frames;
      parser.max_traceback_bytes = limits->max_traceback_bytes;
      parser.traceback_timeout_us = limits->traceback_timeout_us;
    }
    source->id = correlator.AddSource(spec.name, spec.deployment, spec.labels);
    if (source->id >= sources.size()) sources.resize(source->id + 1);
    source->next = spec.start;
    source->lines.Restart(spec.start.offset);
    source->deployment = d.get();
    d->sources.push_back(source.get());
    Start(*source);
    source_ids[spec.name] = source->id;
    const uint32_t id = source->id;
    sources[id] = std::move(source);
    return id;
  }

  Source* Get(uint32_t id) const { return sources.at(id).get(); }

  std::shared_ptr<const rules::RuleSet> rules;
  Options options;
  PipelineEvents& events;
  correlate::Correlator correlator;
  // index = SourceId = correlator source id; null once forgotten (or an id
  // the correlator holds for a forgotten source's evidence)
  std::vector<std::unique_ptr<Source>> sources;
  std::map<std::string, uint32_t> source_ids;  // sources not forgotten
  std::map<std::string, std::unique_ptr<Deployment>> deployments;
  size_t held_count = 0;
  int64_t last_wall = 0;
  uint64_t quiet_skipped = 0;
  std::unique_ptr<BufferSearch> search;  // null: Options::buffer_first off
};

}  // namespace fingerprintd
