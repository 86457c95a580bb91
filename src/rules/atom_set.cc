#include "rules/atom_set.h"

#include <algorithm>

namespace fingerprintd::rules {
RE2::Options AtomSet::Options(int64_t max_mem) {
  RE2::Options options;
  options.set_case_sensitive(false);
  options.set_literal(true);
  options.set_log_errors(false);
  options.set_max_mem(max_mem);
  return options;
}

std::atomic<uint64_t> AtomSet::fallback_count_{0};

AtomSet::AtomSet(std::vector<std::string> atoms, int64_t max_mem)
    : atoms_(std::move(atoms)), max_mem_(max_mem), set_(Options(max_mem), RE2::UNANCHORED) {}

StatusOr<std::unique_ptr<AtomSet>> AtomSet::Compile(const std::vector<std::string>& atoms,
                                                    int64_t max_mem) {
  std::unique_ptr<AtomSet> set(new AtomSet(atoms, max_mem));
  for (const std::string& atom : atoms) {
    if (set->set_.Add(atom, nullptr) < 0) {
      return InternalError("cannot add prefilter atom: " + atom);
    }
  }
  if (!set->set_.Compile()) {
    return InternalError("prefilter set does not compile within " + std::to_string(max_mem >> 10) +
                         " KiB");
  }
  return set;
}

bool AtomSet::Find(std::string_view text, std::vector<int>* found) const {
  found->clear();
  // RE2::Set allocates when asked which atoms matched: ask only if any did.
  RE2::Set::ErrorInfo error{RE2::Set::kNoError};
  if (set_.Match(text, nullptr, &error)) {
    if (set_.Match(text, found, &error)) {
      std::sort(found->begin(), found->end());
      return true;
    }
  }
  if (error.kind == RE2::Set::kNoError) return false;
  // kOutOfMemory (or any other failure): "false" says nothing about the line.
  fallback_count_.fetch_add(1, std::memory_order_relaxed);
  FindEachAtom(text, found);
  return !found->empty();
}

void AtomSet::FindEachAtom(std::string_view text, std::vector<int>* found) const {
  std::call_once(fallback_once_, [this] {
    fallback_.reserve(atoms_.size());
    for (const std::string& atom : atoms_) {
      fallback_.push_back(std::make_unique<RE2>(atom, Options(max_mem_)));
    }
  });
  found->clear();
  for (size_t i = 0; i < fallback_.size(); ++i) {
    // A literal RE2 that did not compile within the budget is a candidate:
    // never fewer atoms than occur.
    if (!fallback_[i]->ok() || RE2::PartialMatch(text, *fallback_[i])) {
      found->push_back(static_cast<int>(i));
    }
  }
}

uint64_t AtomSet::FallbackCount() { return fallback_count_.load(std::memory_order_relaxed); }

}  // namespace fingerprintd::rules
