// CountingEvents: a PipelineEvents fake that counts every call, for tests that
// assert what a metrics user would see (lines dropped by reason, fallbacks,
// tracebacks assembled, ...).
//
// Threading: not thread-safe; one test thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "fingerprintd/pipeline_events.h"

namespace fingerprintd::testing {

class CountingEvents final : public PipelineEvents {
 public:
  void LineRead(std::string_view source, uint64_t bytes) override {
    ++lines_read;
    bytes_read += bytes;
    last_source.assign(source.data(), source.size());
  }
  void LineDropped(DropReason reason) override { ++dropped[static_cast<size_t>(reason)]; }
  void TimeGuessed(TimeFallback fallback) override { ++guessed[static_cast<size_t>(fallback)]; }
  void TracebackAssembled() override { ++tracebacks; }
  void RuleMatched(std::string_view rule, std::string_view stage) override {
    ++rule_matches[std::string(rule) + "/" + std::string(stage)];
  }
  void IncidentOpened(std::string_view rule, std::string_view, std::string_view) override {
    ++incidents_opened[std::string(rule)];
  }
  void IncidentUpdated(std::string_view rule) override { ++incidents_updated[std::string(rule)]; }
  void FileRotated() override { ++rotations; }
  void FileTruncated() override { ++truncations; }
  void StateEvicted(Evicted what) override { ++evicted[static_cast<size_t>(what)]; }
  void LineReread(std::string_view, uint64_t bytes) override {
    ++lines_reread;
    bytes_reread += bytes;
  }
  void RereadAtRestore(std::string_view, uint64_t bytes) override { bytes_to_reread += bytes; }

  uint64_t Dropped(DropReason reason) const { return dropped[static_cast<size_t>(reason)]; }
  uint64_t Guessed(TimeFallback fallback) const { return guessed[static_cast<size_t>(fallback)]; }
  uint64_t Evictions(Evicted what) const { return evicted[static_cast<size_t>(what)]; }

  uint64_t lines_read = 0;
  uint64_t bytes_read = 0;
  uint64_t lines_reread = 0;
  uint64_t bytes_reread = 0;
  uint64_t bytes_to_reread = 0;  // announced at restores
  std::string last_source;
  std::array<uint64_t, static_cast<size_t>(DropReason::kCount)> dropped{};
  std::array<uint64_t, static_cast<size_t>(TimeFallback::kCount)> guessed{};
  uint64_t tracebacks = 0;
  std::map<std::string, uint64_t> rule_matches;  // "rule/stage" -> count
  std::map<std::string, uint64_t> incidents_opened;
  std::map<std::string, uint64_t> incidents_updated;
  std::array<uint64_t, static_cast<size_t>(Evicted::kCount)> evicted{};
  uint64_t rotations = 0;
  uint64_t truncations = 0;
};

}  // namespace fingerprintd::testing
