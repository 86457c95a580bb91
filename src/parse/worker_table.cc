// WorkerTable (fingerprintd/parse.h): the interned process streams of a source.
//
// Lookups here are linear; SourceParser keeps a hash index and a last-prefix
// cache in front of the table, so Intern() runs once per new stream, not per
// line.
#include <memory>

#include "fingerprintd/parse.h"

namespace fingerprintd::parse {
namespace {

constexpr std::string_view kOverflowName = "(overflow)";

}  // namespace

WorkerInfo* WorkerTable::Intern(ProcessRole role, std::string_view name, int32_t pid,
                                std::string_view ip, size_t max_workers, bool* overflowed) {
  *overflowed = false;
  WorkerInfo* overflow = nullptr;
  for (const std::unique_ptr<WorkerInfo>& w : workers_) {
    if (w->pid == pid && w->name == name && w->ip == ip && w->role == role) return w.get();
    if (w->name == kOverflowName && w->pid == -1) overflow = w.get();
  }
  // The overflow entry itself does not count against the cap.
  const size_t used = workers_.size() - (overflow != nullptr ? 1 : 0);
  if (used >= max_workers) {
    *overflowed = true;
    if (overflow != nullptr) return overflow;
    auto entry = std::make_unique<WorkerInfo>();
    entry->id = static_cast<uint32_t>(workers_.size());
    entry->role = ProcessRole::kOther;
    entry->name = kOverflowName;
    workers_.push_back(std::move(entry));
    return workers_.back().get();
  }
  auto entry = std::make_unique<WorkerInfo>();
  entry->id = static_cast<uint32_t>(workers_.size());
  entry->role = role;
  entry->name.assign(name.data(), name.size());
  entry->pid = pid;
  entry->ip.assign(ip.data(), ip.size());
  workers_.push_back(std::move(entry));
  return workers_.back().get();
}

WorkerInfo* WorkerTable::Unprefixed() {
  for (const std::unique_ptr<WorkerInfo>& w : workers_) {
    if (w->role == ProcessRole::kUnknown && w->name.empty() && w->pid == -1) return w.get();
  }
  bool overflowed = false;
  // Never refused: unprefixed lines must always have a stream.
  return Intern(ProcessRole::kUnknown, "", -1, "", workers_.size() + 1, &overflowed);
}

}  // namespace fingerprintd::parse
