// Test helper: replays files or text through the real pipeline with the
// embedded rule pack and returns the final revision of every incident.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "fingerprintd/correlate.h"
#include "fingerprintd/source.h"

namespace fingerprintd::testing {

inline std::string SourceDir() { return FINGERPRINTD_SOURCE_DIR; }
inline std::string Golden(const std::string& name) { return SourceDir() + "/tests/golden/" + name; }

using LatestIncidentSink = correlate::LatestIncidents;

inline std::shared_ptr<const rules::RuleSet> EmbeddedRules() {
  static std::shared_ptr<const rules::RuleSet> rules = [] {
    auto loaded = rules::LoadEmbeddedRules();
    if (!loaded.ok()) ADD_FAILURE() << loaded.status().message();
    return loaded.ok() ? *loaded : nullptr;
  }();
  return rules;
}

struct ReplayResult {
  Status status;
  std::vector<correlate::Incident> incidents;
  std::string jsonl;
};

inline ReplayResult ReplayPaths(std::vector<std::string> paths,
                                const std::string& deployment_from = "",
                                std::map<std::string, std::string> labels = {},
                                size_t threads = 1) {
  source::ReplayOptions options;
  options.threads = threads;
  options.paths = std::move(paths);
  options.deployment_from = deployment_from;
  options.labels = std::move(labels);
  options.parser.current_year = 2026;
  LatestIncidentSink sink;
  NullPipelineEvents events;
  source::ReplayStats stats;
  ReplayResult result;
  result.status = source::Replay(options, EmbeddedRules(), events, sink, &stats);
  result.incidents = sink.Sorted();
  for (const auto& incident : result.incidents) {
    result.jsonl += correlate::IncidentToJson(incident) + "\n";
  }
  return result;
}

inline std::vector<correlate::Incident> ReplayString(const std::string& text) {
  LatestIncidentSink sink;
  NullPipelineEvents events;
  parse::ParserOptions options;
  options.current_year = 2026;
  source::ReplayText(text, "inline.log", "inline", options, EmbeddedRules(), events, sink);
  return sink.Sorted();
}

inline std::vector<std::string> RuleIds(const std::vector<correlate::Incident>& incidents) {
  std::vector<std::string> ids;
  for (const auto& i : incidents) ids.push_back(i.rule->id);
  return ids;
}

}  // namespace fingerprintd::testing
