// WorkerTable (fingerprintd/parse.h): the interned process streams of a source.
//
// Lookups here are linear; SourceParser keeps a hash index and a last-prefix
// cache in front of the table, so Intern() runs once per new stream, not per
// line.
#include <memory>

#include "fingerprintd/parse.h"

namespace fingerprintd::parse {

WorkerInfo* WorkerTable::Intern(ProcessRole role, std::string_view name, int32_t pid,
                                std::string_view ip) {
  for (const std::unique_ptr<WorkerInfo>& w : workers_) {
    if (w->pid == pid && w->name == name && w->ip == ip && w->role == role) return w.get();
  }
  auto entry = std::make_unique<WorkerInfo>();
  entry->id = static_cast<uint32_t>(workers_.size());
  Reuse(entry.get(), role, name, pid, ip);
  workers_.push_back(std::move(entry));
  return workers_.back().get();
}

void WorkerTable::Reuse(WorkerInfo* worker, ProcessRole role, std::string_view name, int32_t pid,
                        std::string_view ip) {
  const uint32_t id = worker->id;
  *worker = WorkerInfo();
  worker->id = id;
  worker->role = role;
  worker->name.assign(name.data(), name.size());
  worker->pid = pid;
  worker->ip.assign(ip.data(), ip.size());
}

void WorkerTable::Assign(const std::vector<WorkerInfo>& workers) {
  workers_.clear();
  for (const WorkerInfo& w : workers) {
    workers_.push_back(std::make_unique<WorkerInfo>(w));
    workers_.back()->id = static_cast<uint32_t>(workers_.size() - 1);
  }
}

WorkerInfo* WorkerTable::Unprefixed() {
  for (const std::unique_ptr<WorkerInfo>& w : workers_) {
    if (w->role == ProcessRole::kUnknown && w->name.empty() && w->pid == -1) return w.get();
  }
  return Intern(ProcessRole::kUnknown, "", -1, "");
}

}  // namespace fingerprintd::parse
