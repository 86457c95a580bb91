// What a checkpoint keeps of a RuleEngine: per stream, the stage matches and
// pending symptoms, and the input's last words (RuleEngine::SaveState,
// RestoreState).
#include <nlohmann/json.hpp>

#include "common/state_json.h"
#include "rules/engine_impl.h"

namespace fingerprintd::rules {

std::string RuleEngine::Impl::SaveState(uint64_t safe_line) const {
  using nlohmann::json;
  json jstreams = json::array();
  for (size_t i = 0; i < streams.size(); ++i) {
    const Stream& stream = streams[i];
    if (!stream.seen) continue;
    json jrules = json::array();
    for (const RuleState& state : stream.rules) {
      const Rule& rule = rules->rules()[state.rule];
      json jstages = json::object();
      for (size_t st = 0; st < state.stages.size(); ++st) {
        const std::optional<StageMatch>& m = state.stages[st];
        if (!m || m->line > safe_line) continue;
        jstages[rule.stages[st].id] = {{"line", m->line},
                                       {"offset", m->offset},
                                       {"time", m->time_us},
                                       {"text", m->text},
                                       {"time_read", m->time_read}};
      }
      if (!jstages.empty()) jrules.push_back({{"rule", rule.id}, {"stages", jstages}});
    }
    json jstream = {{"worker", i}, {"rank", stream.rank}, {"rules", jrules}};
    // A catch-all symptom just after the last traceback reports its
    // exception (kCarriedExceptionLines).
    if (stream.last_root && stream.last_root_line <= safe_line &&
        latest_line < stream.last_root_line + kCarriedExceptionLines) {
      json frames = json::array();
      for (const Frame& f : stream.last_root->frames) {
        frames.push_back({f.file, f.line, f.function, f.code});
      }
      jstream["last_root"] = {{"line", stream.last_root_line},
                              {"type", stream.last_root->type},
                              {"message", stream.last_root->message},
                              {"has_header", stream.last_root->has_header},
                              {"frames", frames}};
    }
    jstreams.push_back(std::move(jstream));
  }
  return DumpState(json{{"streams", jstreams}});
}

Status RuleEngine::Impl::RestoreState(const std::string& text, const parse::WorkerTable& table) {
  using nlohmann::json;
  if (!streams.empty()) {
    return FailedPreconditionError("engine state: restore into an engine already fed");
  }
  std::map<std::string_view, uint32_t> rule_index;
  for (uint32_t r = 0; r < rules->rules().size(); ++r) rule_index[rules->rules()[r].id] = r;
  std::vector<Stream> read(std::min<size_t>(table.size(), options.max_streams));
  size_t dropped = 0;
  try {
    const json js = json::parse(text);
    for (const json& jstream : js.at("streams")) {
      const size_t id = jstream.at("worker").get<size_t>();
      if (id >= read.size()) continue;  // a stream the parser did not keep
      Stream& stream = read[id];
      stream.seen = true;
      stream.rank = jstream.at("rank").get<int32_t>();
      if (jstream.contains("last_root")) {
        const json& jr = jstream.at("last_root");
        ExceptionBlock root;
        root.type = jr.at("type").get<std::string>();
        root.message = jr.at("message").get<std::string>();
        root.has_header = jr.at("has_header").get<bool>();
        for (const json& jf : jr.at("frames")) {
          root.frames.push_back(Frame{jf.at(0).get<std::string>(), jf.at(1).get<int32_t>(),
                                      jf.at(2).get<std::string>(), jf.at(3).get<std::string>()});
        }
        stream.last_root = std::move(root);
        stream.last_root_line = jr.at("line").get<uint64_t>();
      }
      for (const json& jrule : jstream.at("rules")) {
        auto r = rule_index.find(jrule.at("rule").get<std::string>());
        const json& jstages = jrule.at("stages");
        if (r == rule_index.end()) {
          dropped += jstages.size();
          continue;
        }
        const Rule& rule = rules->rules()[r->second];
        RuleState& state = stream.StateFor(r->second, rule.stages.size());
        for (const auto& [saved_id, jm] : jstages.items()) {
          const std::string& stage_id = saved_id;  // clang 14 cannot capture a binding
          auto stage = std::find_if(rule.stages.begin(), rule.stages.end(),
                                    [&](const Stage& st) { return st.id == stage_id; });
          if (stage == rule.stages.end()) {
            ++dropped;
            continue;
          }
          state.stages[stage - rule.stages.begin()] =
              StageMatch{jm.at("line").get<uint64_t>(), jm.at("offset").get<uint64_t>(),
                         jm.at("time").get<int64_t>(), jm.at("text").get<std::string>(),
                         jm.at("time_read").get<bool>()};
        }
      }
    }
  } catch (const json::exception& e) {
    return DataLossError("engine state: " + StateErrorText(e));
  }
  streams = std::move(read);
  workers.assign(streams.size(), nullptr);
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].seen) workers[i] = &table.Get(static_cast<uint32_t>(i));
  }
  for (size_t i = 0; i < dropped; ++i) events.StateEvicted(Evicted::kStageMatch);
  for (const Stream& stream : streams) {
    for (const RuleState& state : stream.rules) {
      for (const std::optional<StageMatch>& m : state.stages) {
        if (m && m->time_us != 0) {
          next_expiry_us = std::min(next_expiry_us, m->time_us + KeptFor(state.rule));
        }
      }
    }
  }
  return OkStatus();
}

}  // namespace fingerprintd::rules
