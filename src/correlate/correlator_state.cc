#include "correlate/correlator_state.h"

#include <algorithm>
#include <stdexcept>

#include "common/state_json.h"
#include "correlate/correlator_impl.h"

namespace fingerprintd::correlate {

using nlohmann::json;

json WorkerToJson(const WorkerInfo& w) {
  return json{{"role", static_cast<int>(w.role)},
              {"name", w.name},
              {"pid", w.pid},
              {"ip", w.ip},
              {"dp", w.dp},
              {"pp", w.pp},
              {"tp", w.tp},
              {"ep", w.ep},
              {"rank", w.rank}};
}

WorkerInfo WorkerFromJson(const json& j) {
  WorkerInfo w;
  const int role = j.at("role").get<int>();
  if (role < 0 || role > static_cast<int>(ProcessRole::kOther)) {
    throw std::invalid_argument("unknown process role " + std::to_string(role));
  }
  w.role = static_cast<ProcessRole>(role);
  w.name = j.at("name").get<std::string>();
  w.pid = j.at("pid").get<int32_t>();
  w.ip = j.at("ip").get<std::string>();
  w.dp = j.at("dp").get<int32_t>();
  w.pp = j.at("pp").get<int32_t>();
  w.tp = j.at("tp").get<int32_t>();
  w.ep = j.at("ep").get<int32_t>();
  w.rank = j.at("rank").get<int32_t>();
  return w;
}

json HitToJson(const rules::RuleHit& hit, const std::vector<std::string>& source_names) {
  json stages = json::array();
  for (const rules::EvidenceLine& e : hit.stages) {
    stages.push_back(json{{"source", source_names.at(e.source_id)},
                          {"line", e.line},
                          {"time", e.time_us},
                          {"stage", e.stage},
                          {"text", e.text}});
  }
  return json{{"rule", hit.rule->id},
              {"source", source_names.at(hit.source_id)},
              {"worker", WorkerToJson(hit.worker)},
              {"confirmed", hit.confidence == rules::Confidence::kConfirmed},
              {"first_time", hit.first_time_us},
              {"time", hit.time_us},
              {"time_read", hit.time_read},
              {"stages", stages},
              {"exception", hit.exception},
              {"fingerprint", hit.traceback_fingerprint},
              {"frames", hit.frames},
              {"raised_in", hit.raised_in},
              {"origin_pid", hit.origin_pid},
              {"origin_ip", hit.origin_ip}};
}

bool HitFromJson(const json& j, const rules::RuleSet& rules,
                 const std::map<std::string, uint32_t>& source_ids, rules::RuleHit* hit) {
  hit->rule = rules.Find(j.at("rule").get<std::string>());
  if (hit->rule == nullptr) return false;
  hit->source_id = source_ids.at(j.at("source").get<std::string>());
  hit->worker = WorkerFromJson(j.at("worker"));
  hit->confidence =
      j.at("confirmed").get<bool>() ? rules::Confidence::kConfirmed : rules::Confidence::kPartial;
  hit->first_time_us = j.at("first_time").get<int64_t>();
  hit->time_us = j.at("time").get<int64_t>();
  hit->time_read = j.value("time_read", false);  // absent in older states
  for (const json& e : j.at("stages")) {
    hit->stages.push_back(
        rules::EvidenceLine{source_ids.at(e.at("source").get<std::string>()),
                            e.at("line").get<uint64_t>(), e.at("time").get<int64_t>(),
                            e.at("stage").get<std::string>(), e.at("text").get<std::string>()});
  }
  hit->exception = j.at("exception").get<std::string>();
  hit->traceback_fingerprint = j.at("fingerprint").get<std::string>();
  hit->frames = j.at("frames").get<std::vector<std::string>>();
  hit->raised_in = j.value("raised_in", std::string());  // absent in older states
  hit->origin_pid = j.at("origin_pid").get<int32_t>();
  hit->origin_ip = j.at("origin_ip").get<std::string>();
  return true;
}

// A source of a saved state that was already forgotten: only its name is
// kept, for the evidence of the open incidents restored with it.
uint32_t Correlator::Impl::AddForgotten(const std::string& name) {
  source_names.push_back(name);
  source_deployment.push_back(nullptr);
  source_state.push_back(SourceState::kForgotten);
  forgotten_ids.push_back(static_cast<uint32_t>(source_names.size() - 1));
  return static_cast<uint32_t>(source_names.size() - 1);
}

// The same ids, names and deployments (facts, workers, labels) as `other`,
// and no incident.
void Correlator::Impl::CopySourcesFrom(const Impl& other) {
  source_names = other.source_names;
  source_state = other.source_state;
  forgotten_ids = other.forgotten_ids;
  free_ids = other.free_ids;
  reclaim_at = other.reclaim_at;
  for (const auto& [name, d] : other.deployments)
    deployments[name] = std::make_unique<Deployment>(*d);
  source_deployment.clear();
  for (const Deployment* d : other.source_deployment) {
    source_deployment.push_back(d == nullptr ? nullptr : deployments.at(d->name).get());
  }
}

std::string Correlator::Impl::SaveState() const {
  using nlohmann::json;
  json sources = json::array();
  const std::vector<bool> referenced = ReferencedIds();
  for (size_t i = 0; i < source_names.size(); ++i) {
    if (source_state[i] == SourceState::kLive) {
      sources.push_back({{"name", source_names[i]}, {"deployment", source_deployment[i]->name}});
    } else if (source_state[i] == SourceState::kForgotten && referenced[i]) {
      sources.push_back({{"name", source_names[i]}, {"deployment", ""}, {"forgotten", true}});
    }
  }
  json deps = json::array();
  for (const auto& [name, d] : deployments) {
    json workers = json::array();
    for (const KnownWorker& w : d->workers) {
      const std::string& source = w.source_id == kNoSource ? "" : source_names[w.source_id];
      workers.push_back({{"worker", WorkerToJson(w.info)}, {"source", source}});
    }
    json rank_ready = json::array();
    for (const auto& [key, at] : d->rank_ready) rank_ready.push_back({key.first, key.second, at});
    json recovered = json::object();
    for (const auto& [rule, closed] : d->recovered) {
      recovered[rule] = {{"id", closed.first}, {"at", closed.second}};
    }
    deps.push_back({{"name", name},
                    {"labels", d->labels},
                    {"facts", d->facts},
                    {"workers", workers},
                    {"gone_since", d->gone_since_us},
                    {"ready", d->ready_us},
                    {"stop", d->stop_us},
                    {"stop_until", d->stop_until_us},
                    {"recovered", recovered},
                    {"starts", d->starts},
                    {"rank_ready", rank_ready}});
  }
  json incidents = json::array();
  for (const auto& inc : open) {
    json workers = json::array();
    for (const WorkerHits& w : inc->workers) {
      json hits = json::array();
      for (const RuleHit& h : w.hits) hits.push_back(HitToJson(h, source_names));
      workers.push_back({{"label", w.label},
                         {"dp", w.dp},
                         {"pid", w.pid},
                         {"ip", w.ip},
                         {"rank", w.rank},
                         {"own", w.own},
                         {"hits", hits}});
    }
    json reraises = json::array();
    for (const RuleHit& h : inc->reraises) reraises.push_back(HitToJson(h, source_names));
    json consequences = json::array();
    for (const FoldedConsequence& c : inc->consequences) {
      json processes = json::array();
      for (const auto& [printer, p] : c.processes) {
        json jp = {{"printer", printer},
                   {"label", p.label},
                   {"rank", p.rank},
                   {"first_seen", p.first_seen_us},
                   {"last_seen", p.last_seen_us},
                   {"hits", p.hits}};
        if (p.has_evidence) {
          jp["evidence"] = {{"source", source_names.at(p.evidence.source_id)},
                            {"line", p.evidence.line},
                            {"time", p.evidence.time_us},
                            {"stage", p.evidence.stage},
                            {"text", p.evidence.text}};
        }
        processes.push_back(std::move(jp));
      }
      consequences.push_back({{"rule", c.rule->id}, {"processes", processes}});
    }
    incidents.push_back({{"rule", inc->rule->id},
                         {"deployment", inc->deployment->name},
                         {"id", inc->id},
                         {"first_seen", inc->first_seen_us},
                         {"last_seen", inc->last_seen_us},
                         {"anchor", inc->anchor_us},
                         {"id_time", inc->id_time_us},
                         {"seen_read", inc->seen_read},
                         {"occurrences", inc->occurrences},
                         {"attempt", inc->attempt_us},
                         {"attempt_starts", inc->attempt_starts},
                         {"reported", inc->reported},
                         {"regressed_from", inc->regressed_from},
                         {"revision", inc->revision},
                         {"dirty", inc->dirty},
                         {"hits", inc->hits},
                         {"workers", workers},
                         {"reraises", reraises},
                         {"consequences", consequences}});
  }
  json state = {{"version", kStateVersion},
                {"sources", sources},
                {"deployments", deps},
                {"incidents", incidents}};
  return DumpState(state);
}

Status Correlator::Impl::RestoreState(const std::string& text) {
  using nlohmann::json;
  try {
    json state = json::parse(text);
    // Version 2 (before the lifetime) restores as one occurrence each; 3, with no
    // start lines and no consequences.
    const int version = state.at("version").get<int>();
    if (version < 2 || version > kStateVersion) {
      return DataLossError("correlator state: unsupported version " + state.at("version").dump());
    }
    std::map<std::string, uint32_t> ids;
    for (size_t i = 0; i < source_names.size(); ++i) {
      if (source_state[i] != SourceState::kFree) ids.emplace(source_names[i], i);
    }
    for (const json& s : state.at("sources")) {
      std::string name = s.at("name").get<std::string>();
      if (ids.count(name) != 0) continue;
      ids[name] = s.value("forgotten", false)
                      ? AddForgotten(name)
                      : AddSource(name, s.at("deployment").get<std::string>(), {});
    }
    for (const json& jd : state.at("deployments")) {
      auto& d = deployments[jd.at("name").get<std::string>()];
      if (!d) {
        d = std::make_unique<Deployment>();
        d->name = jd.at("name").get<std::string>();
      }
      for (const auto& [k, v] : jd.at("labels").items()) {
        d->labels.emplace(k, v.get<std::string>());
      }
      for (const auto& [k, v] : jd.at("facts").items()) d->facts.emplace(k, v.get<std::string>());
      for (const json& w : jd.at("workers")) {
        auto source = ids.find(w.at("source").get<std::string>());
        d->workers.push_back(KnownWorker{WorkerFromJson(w.at("worker")),
                                         source == ids.end() ? kNoSource : source->second});
      }
      d->gone_since_us = jd.value("gone_since", int64_t{0});
      d->ready_us = jd.value("ready", int64_t{0});
      d->stop_us = jd.value("stop", int64_t{0});  // absent in older states
      d->stop_until_us = jd.value("stop_until", int64_t{0});
      if (jd.contains("starts")) {
        d->starts = jd.at("starts").get<std::vector<int64_t>>();
        std::sort(d->starts.begin(), d->starts.end());  // searched as sorted
      }
      for (const json& r : jd.value("rank_ready", json::array())) {
        d->rank_ready[{r.at(0).get<int32_t>(), r.at(1).get<int32_t>()}] = r.at(2).get<int64_t>();
      }
      if (jd.contains("recovered")) {
        for (const auto& [rule, jr] : jd.at("recovered").items()) {
          d->recovered[rule] = {jr.at("id").get<std::string>(), jr.at("at").get<int64_t>()};
        }
      }
    }
    for (const json& ji : state.at("incidents")) {
      const rules::Rule* rule = rules->Find(ji.at("rule").get<std::string>());
      auto dep = deployments.find(ji.at("deployment").get<std::string>());
      if (rule == nullptr || dep == deployments.end()) {
        events.StateEvicted(Evicted::kIncident);  // the rule left the pack
        continue;
      }
      auto inc = std::make_unique<OpenIncident>();
      inc->rule = rule;
      inc->deployment = dep->second.get();
      inc->id = ji.at("id").get<std::string>();
      inc->first_seen_us = ji.at("first_seen").get<int64_t>();
      inc->last_seen_us = ji.at("last_seen").get<int64_t>();
      inc->anchor_us = ji.at("anchor").get<int64_t>();
      inc->id_time_us = ji.value("id_time", inc->anchor_us);  // older states: the anchor
      inc->seen_read = ji.value("seen_read", false);
      inc->occurrences = ji.value("occurrences", 1);
      inc->attempt_us = ji.value("attempt", inc->id_time_us);
      if (ji.contains("attempt_starts")) {
        inc->attempt_starts = ji.at("attempt_starts").get<std::vector<int64_t>>();
        std::sort(inc->attempt_starts.begin(), inc->attempt_starts.end());
      } else if (inc->attempt_us != 0) {
        inc->attempt_starts = {inc->attempt_us};  // older states: the current attempt only
      }
      inc->reported = ji.value("reported", ji.at("revision").get<int>() > 0);
      inc->regressed_from = ji.value("regressed_from", std::string());
      inc->revision = ji.at("revision").get<int>();
      inc->dirty = ji.at("dirty").get<bool>();
      inc->hits = ji.at("hits").get<uint64_t>();
      inc->order = next_order++;
      for (const json& jw : ji.at("workers")) {
        WorkerHits w;
        w.label = jw.at("label").get<std::string>();
        w.dp = jw.at("dp").get<int32_t>();
        w.pid = jw.at("pid").get<int32_t>();
        w.ip = jw.at("ip").get<std::string>();
        w.rank = jw.at("rank").get<int32_t>();
        w.own = jw.at("own").get<bool>();
        for (const json& jh : jw.at("hits")) {
          RuleHit hit;
          if (HitFromJson(jh, *rules, ids, &hit)) w.hits.push_back(std::move(hit));
        }
        inc->workers.push_back(std::move(w));
      }
      for (const json& jh : ji.at("reraises")) {
        RuleHit hit;
        if (HitFromJson(jh, *rules, ids, &hit)) inc->reraises.push_back(std::move(hit));
      }
      for (const json& jc : ji.value("consequences", json::array())) {
        FoldedConsequence c;
        c.rule = rules->Find(jc.at("rule").get<std::string>());
        if (c.rule == nullptr) continue;  // the rule left the pack
        for (const json& jp : jc.at("processes")) {
          ConsequenceProcess p;
          p.label = jp.at("label").get<std::string>();
          p.rank = jp.at("rank").get<int32_t>();
          p.first_seen_us = jp.at("first_seen").get<int64_t>();
          p.last_seen_us = jp.at("last_seen").get<int64_t>();
          p.hits = jp.at("hits").get<uint64_t>();
          if (jp.contains("evidence")) {
            const json& e = jp.at("evidence");
            p.evidence = rules::EvidenceLine{
                ids.at(e.at("source").get<std::string>()), e.at("line").get<uint64_t>(),
                e.at("time").get<int64_t>(), e.at("stage").get<std::string>(),
                e.at("text").get<std::string>()};
            p.has_evidence = true;
          }
          c.processes.emplace(jp.at("printer").get<std::string>(), std::move(p));
        }
        inc->consequences.push_back(std::move(c));
      }
      open.push_back(std::move(inc));
    }
    // Deployments of sources forgotten before the save, kept then for an
    // open incident that did not come back (its rule left the pack).
    std::vector<Deployment*> idle;
    for (const auto& [name, d] : deployments) {
      if (d->live_sources == 0) idle.push_back(d.get());
    }
    for (Deployment* d : idle) ForgetIfIdle(d);
  } catch (const nlohmann::json::exception& e) {
    return DataLossError("correlator state: " + StateErrorText(e));
  } catch (const std::out_of_range& e) {
    return DataLossError(std::string("correlator state: unknown source: ") + e.what());
  } catch (const std::invalid_argument& e) {
    return DataLossError(std::string("correlator state: ") + e.what());
  }
  return OkStatus();
}

// Restores into a copy and swaps it in only on success, so a malformed blob
// leaves the correlator as it was.
Status Correlator::RestoreState(const std::string& state) {
  auto scratch = std::make_unique<Impl>(impl_->rules, impl_->events, impl_->sink, impl_->options);
  scratch->CopySourcesFrom(*impl_);
  if (!impl_->open.empty()) {
    return FailedPreconditionError(
        "correlator state: restore into a correlator with open incidents");
  }
  if (Status s = scratch->RestoreState(state); !s.ok()) return s;
  impl_ = std::move(scratch);
  return OkStatus();
}

}  // namespace fingerprintd::correlate
