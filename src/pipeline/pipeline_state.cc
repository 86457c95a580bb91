// What a checkpoint keeps of a Pipeline (Pipeline::SaveState, RestoreState):
// its sources' positions, clocks, parser and engine states, the events each
// deployment still holds, and the correlator's state.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/state_json.h"
#include "correlate/correlator_state.h"
#include "pipeline/pipeline_impl.h"

namespace fingerprintd {

nlohmann::json Pipeline::Impl::Save() const {
  using nlohmann::json;
  std::vector<std::string> names;
  for (uint32_t id = 0; id < sources.size(); ++id) names.push_back(correlator.SourceName(id));
  json jsources = json::array();
  for (const auto& s : sources) {
    if (!s) continue;  // forgotten: nothing of it is held
    const SourcePosition safe = Safe(*s);
    json reported = json::array();
    for (const auto& [line, rule] : s->reported) {
      if (line > safe.line) reported.push_back({line, rule});
    }
    json js = {{"name", s->spec.name},
               {"deployment", s->spec.deployment},
               {"labels", s->spec.labels},
               {"offset", safe.offset},
               {"line", safe.line},
               {"read_to", {{"offset", s->next.offset}, {"line", s->next.line}}},
               {"floor", ClockAt(*s, safe).first},
               {"ticked", ClockAt(*s, safe).second},
               {"seq", s->seq},
               {"ended", s->ended},
               {"transient", s->spec.transient},
               {"reported", reported}};
    // What the restart cannot read again from the safe position: the
    // parser's streams and the engine's stage matches before it.
    if (!s->ended) {
      js["parser"] = json::parse(s->parser->SaveState(safe.line));
      js["engine"] = json::parse(s->engine->SaveState(safe.line));
    }
    jsources.push_back(std::move(js));
  }
  json jdeployments = json::array();
  for (const auto& [name, d] : deployments) {
    json held = json::array();
    for (const auto& [key, h] : d->held) {
      json e = {{"key", std::get<0>(key)},
                {"source", std::get<1>(key)},
                {"seq", std::get<2>(key)},
                {"kind", static_cast<int>(h.kind)}};
      switch (h.kind) {
        case Kind::kHit:
          e["hit"] = correlate::HitToJson(h.hit, names);
          break;
        case Kind::kFact:
          e["name"] = h.name;
          e["value"] = h.value;
          break;
        case Kind::kWorkerSeen:
        case Kind::kWorkerRank:
          e["worker"] = correlate::WorkerToJson(h.worker);
          break;
      }
      held.push_back(std::move(e));
    }
    json jd = {{"name", name}, {"clock", d->clock}, {"held", held}};
    // Kept for an open incident after its sources were forgotten: a restart
    // goes on closing it from there.
    if (d->gone_floor != kNoTime) jd["gone_floor"] = d->gone_floor;
    jdeployments.push_back(std::move(jd));
  }
  return {{"version", kPipelineStateVersion},
          {"sources", jsources},
          {"deployments", jdeployments},
          {"correlator", json::parse(correlator.SaveState())}};
}

// Reads everything first; the pipeline changes only once all of it parsed
// and the correlator accepted its part.
Status Pipeline::Impl::Restore(const nlohmann::json& state,
                               const Pipeline::RestoredSpec& restored_spec) {
  using nlohmann::json;
  if (state.at("version").get<int>() != kPipelineStateVersion) {
    return DataLossError("pipeline state: unsupported version " + state.at("version").dump());
  }
  for (const auto& s : sources) {
    if (s && (s->seq != 0 || s->next.offset != s->spec.start.offset)) {
      return FailedPreconditionError("pipeline state: restore into a pipeline already fed");
    }
  }
  struct SourceState {
    SourceSpec spec;
    SourcePosition safe, read_to;
    int64_t floor, ticked;
    std::string parser, engine;  // their SaveState() texts; empty in older checkpoints
    uint64_t seq;
    bool ended;
    std::set<std::pair<uint64_t, std::string>> reported;
  };
  std::vector<SourceState> read_sources;
  for (const json& js : state.at("sources")) {
    SourceState r;
    r.spec.name = js.at("name").get<std::string>();
    r.spec.deployment = js.at("deployment").get<std::string>();
    r.spec.labels = js.at("labels").get<std::map<std::string, std::string>>();
    r.safe = {js.at("offset").get<uint64_t>(), js.at("line").get<uint64_t>()};
    r.read_to = r.safe;
    if (js.contains("read_to")) {
      r.read_to = {js.at("read_to").at("offset").get<uint64_t>(),
                   js.at("read_to").at("line").get<uint64_t>()};
    }
    if (js.contains("parser")) r.parser = js.at("parser").dump();
    if (js.contains("engine")) r.engine = js.at("engine").dump();
    r.floor = js.at("floor").get<int64_t>();
    r.ticked = js.at("ticked").get<int64_t>();
    r.seq = js.at("seq").get<uint64_t>();
    r.ended = js.at("ended").get<bool>();
    r.spec.transient = js.value("transient", false);
    for (const json& jr : js.at("reported")) {
      r.reported.emplace(jr.at(0).get<uint64_t>(), jr.at(1).get<std::string>());
    }
    read_sources.push_back(std::move(r));
  }
  // Held events need every source's id: sources named in the state are
  // registered first (one the caller did not add gets its spec completed by
  // `restored_spec`), also so that the correlator, which matches sources by
  // name, does not register them itself with ids the pipeline does not know.
  for (const SourceState& r : read_sources) {
    if (source_ids.count(r.spec.name) != 0) continue;
    SourceSpec spec = r.spec;
    if (restored_spec) restored_spec(&spec);
    Add(spec);
  }
  const std::map<std::string, uint32_t>& ids = source_ids;
  struct HeldState {
    std::string deployment;
    HeldKey key;
    Held held;
  };
  std::vector<HeldState> read_held;
  std::map<std::string, int64_t> clocks, gone_floors;
  for (const json& jd : state.at("deployments")) {
    const std::string name = jd.at("name").get<std::string>();
    clocks[name] = jd.at("clock").get<int64_t>();
    if (jd.contains("gone_floor")) gone_floors[name] = jd.at("gone_floor").get<int64_t>();
    for (const json& e : jd.at("held")) {
      HeldState hs;
      hs.deployment = name;
      hs.key = HeldKey{e.at("key").get<int64_t>(), e.at("source").get<std::string>(),
                       e.at("seq").get<uint64_t>()};
      hs.held.source = ids.at(std::get<1>(hs.key));
      const int kind = e.at("kind").get<int>();
      if (kind < 0 || kind > static_cast<int>(Kind::kWorkerRank)) {
        return DataLossError("pipeline state: unknown event kind " + std::to_string(kind));
      }
      hs.held.kind = static_cast<Kind>(kind);
      switch (hs.held.kind) {
        case Kind::kHit:
          // A hit of a rule no longer in the pack is dropped, counted.
          if (!correlate::HitFromJson(e.at("hit"), *rules, ids, &hs.held.hit)) {
            events.StateEvicted(Evicted::kHeldEvent);
            continue;
          }
          break;
        case Kind::kFact:
          hs.held.name = e.at("name").get<std::string>();
          hs.held.value = e.at("value").get<std::string>();
          break;
        case Kind::kWorkerSeen:
        case Kind::kWorkerRank:
          hs.held.worker = correlate::WorkerFromJson(e.at("worker"));
          break;
      }
      read_held.push_back(std::move(hs));
    }
  }
  // What can still fail, all or nothing: each source's parser and engine
  // state, then the correlator's (which restores all or nothing itself). On
  // a failure every source is as it was added, unfed; nothing else changed.
  auto unfed = [&] {
    for (const SourceState& r : read_sources) Start(*sources[source_ids.at(r.spec.name)]);
  };
  for (const SourceState& r : read_sources) {
    if (r.ended || r.spec.transient) continue;
    Source& s = *sources[source_ids.at(r.spec.name)];
    Status st;
    if (!r.parser.empty()) st = s.parser->RestoreState(r.parser);
    if (st.ok() && !r.engine.empty()) st = s.engine->RestoreState(r.engine, s.parser->workers());
    if (!st.ok()) {
      unfed();
      return st;
    }
  }
  if (Status s = correlator.RestoreState(state.at("correlator").dump()); !s.ok()) {
    unfed();
    return s;
  }
  for (const SourceState& r : read_sources) {
    Source& s = *sources[source_ids.at(r.spec.name)];
    s.next = r.safe;
    s.lines.Restart(s.next.offset);
    s.floor = r.floor;
    s.ticked = r.ticked;
    s.clocks.assign(1, {s.next.line, s.floor, s.ticked});
    s.settled = false;
    s.seq = r.seq;
    s.reported = r.reported;
    // A transient source (a socket stream) never resumes: its connection is gone.
    if (r.ended || r.spec.transient) {
      s.parser.reset();
      s.engine.reset();
      s.tap.reset();
      s.ended = true;
    } else {
      s.parser->Seek(s.next.offset, s.next.line);
      s.parser->CountAsRereadUntil(r.read_to.line);
      if (r.read_to.offset > r.safe.offset) {
        events.RereadAtRestore(s.spec.name, r.read_to.offset - r.safe.offset);
      }
    }
  }
  for (HeldState& hs : read_held) {
    auto it = deployments.find(hs.deployment);
    if (it == deployments.end()) continue;  // no source of it registered
    ++held_count;
    it->second->held.emplace(std::move(hs.key), std::move(hs.held));
  }
  for (const auto& [name, clock] : clocks) {
    auto it = deployments.find(name);
    if (it != deployments.end()) it->second->clock = clock;
  }
  // A deployment whose sources were all forgotten, kept for an open incident
  // the correlator restored: its event time moves on with the wall clock
  // from the first Advance.
  for (const auto& [name, floor] : gone_floors) {
    if (!correlator.RemembersDeployment(name)) continue;
    auto& d = deployments[name];
    if (!d) {
      d = std::make_unique<Deployment>();
      d->name = name;
      d->clock = clocks[name];
    }
    d->gone_floor = std::max(d->gone_floor, floor);
  }
  return OkStatus();
}

std::string Pipeline::SaveState() const { return DumpState(impl_->Save()); }

Status Pipeline::RestoreState(const std::string& text, const RestoredSpec& restored_spec) {
  try {
    return impl_->Restore(nlohmann::json::parse(text), restored_spec);
  } catch (const nlohmann::json::exception& e) {
    return DataLossError("pipeline state: " + StateErrorText(e));
  } catch (const std::out_of_range& e) {
    return DataLossError(std::string("pipeline state: unknown source: ") + e.what());
  }
}

}  // namespace fingerprintd
