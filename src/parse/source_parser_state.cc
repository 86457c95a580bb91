// What a checkpoint keeps of a SourceParser: its process streams and their
// latest times as they were after the checkpoint's safe line
// (SourceParser::SaveState, RestoreState).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/state_json.h"
#include "parse/source_parser_impl.h"

namespace fingerprintd::parse {

std::string SourceParser::SaveState(uint64_t safe_line) const {
  const Impl& p = *impl_;
  const Impl::Times at = p.TimesAt(safe_line);
  const std::vector<int64_t>& times = at.last;
  nlohmann::json workers = nlohmann::json::array();
  for (size_t i = 0; i < p.workers.size(); ++i) {
    const WorkerInfo& w = p.workers.Get(static_cast<uint32_t>(i));
    const int64_t time = i < times.size() ? times[i] : kNoTime;
    workers.push_back({{"role", static_cast<int>(w.role)},
                       {"name", w.name},
                       {"pid", w.pid},
                       {"ip", w.ip},
                       {"dp", w.dp},
                       {"pp", w.pp},
                       {"tp", w.tp},
                       {"ep", w.ep},
                       {"rank", w.rank},
                       {"time", time}});
  }
  return DumpState(
      nlohmann::json{{"workers", workers}, {"time", at.source}, {"dated_time", at.dated}});
}

Status SourceParser::RestoreState(const std::string& state) {
  Impl& p = *impl_;
  if (p.workers.size() != 1 || p.source_last_time != kNoTime) {
    return FailedPreconditionError("parser state: restore into a parser already fed");
  }
  std::vector<WorkerInfo> workers;
  std::vector<int64_t> times;
  int64_t source_time = kNoTime;
  int64_t dated_time = kNoTime;
  try {
    const nlohmann::json js = nlohmann::json::parse(state);
    for (const nlohmann::json& jw : js.at("workers")) {
      WorkerInfo w;
      const int role = jw.at("role").get<int>();
      if (role < 0 || role > static_cast<int>(ProcessRole::kOther)) {
        return DataLossError("parser state: unknown process role " + std::to_string(role));
      }
      w.role = static_cast<ProcessRole>(role);
      w.name = jw.at("name").get<std::string>();
      w.pid = jw.at("pid").get<int32_t>();
      w.ip = jw.at("ip").get<std::string>();
      w.dp = jw.at("dp").get<int32_t>();
      w.pp = jw.at("pp").get<int32_t>();
      w.tp = jw.at("tp").get<int32_t>();
      w.ep = jw.at("ep").get<int32_t>();
      w.rank = jw.at("rank").get<int32_t>();
      workers.push_back(std::move(w));
      times.push_back(jw.at("time").get<int64_t>());
    }
    source_time = js.at("time").get<int64_t>();
    dated_time = js.value("dated_time", kNoTime);  // absent in older states
  } catch (const nlohmann::json::exception& e) {
    return DataLossError("parser state: " + StateErrorText(e));
  }
  // The table is bounded by max_workers (plus the unprefixed stream), as
  // when it was saved; a smaller cap now keeps the first ones.
  if (workers.size() > p.options.max_workers + 1) {
    workers.resize(p.options.max_workers + 1);
    times.resize(workers.size());
  }
  p.workers.Assign(workers);
  p.index.clear();
  p.unprefixed = nullptr;
  for (size_t i = 0; i < p.workers.size(); ++i) {
    WorkerInfo* w = p.workers.Mutable(static_cast<uint32_t>(i));
    if (p.unprefixed == nullptr && w->role == ProcessRole::kUnknown && w->name.empty() &&
        w->pid == -1) {
      p.unprefixed = w;
      continue;
    }
    Impl::IndexKey(w->name, w->pid, w->ip, &p.key_scratch);
    p.index.emplace(p.key_scratch, w);
  }
  if (p.unprefixed == nullptr) p.unprefixed = p.workers.Unprefixed();
  p.last_time = std::move(times);
  p.last_time.resize(p.workers.size(), kNoTime);
  p.source_last_time = source_time;
  p.source_dated_time = dated_time;
  p.base_times = {p.last_time, source_time, dated_time};
  return OkStatus();
}

}  // namespace fingerprintd::parse
