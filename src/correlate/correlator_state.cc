#include "correlate/correlator_state.h"

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
  w.role = static_cast<ProcessRole>(j.at("role").get<int>());
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
  hit->origin_pid = j.at("origin_pid").get<int32_t>();
  hit->origin_ip = j.at("origin_ip").get<std::string>();
  return true;
}

}  // namespace fingerprintd::correlate
