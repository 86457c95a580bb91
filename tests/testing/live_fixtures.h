// The fixture sets live-equals-replay tests write live and replay, the ways
// they are written, and how their incidents are compared: shared by the real
// daemon's test (tests/integration/live_equals_replay_test.cc, real time) and
// the in-process one in virtual time (tests/source/live_equals_replay_test.cc).
//
// A fixture set is what one replay reads: a golden case (testing/
// golden_cases.h: a file, or a directory of one run's files, with the labels
// or deployment_from that name its deployments) or examples/ (one deployment
// per subdirectory). The sets are listed from disk when asked; a golden .log
// no case covers is a set of its own. Each set is written in up to three
// ways:
//   whole       the set's files written complete outside the tailed
//               directory, then renamed into it (a file or a subdirectory
//               appears at once, complete);
//   chunks      each file cut at random byte offsets (mid-line, mid-UTF-8),
//               the pieces of all files interleaved at the pace of their
//               sizes, a few milliseconds apart;
//   per_worker  (sets of several files) the files written line by line
//               together, in the order of the lines' own times, as the
//               workers of one run write them.
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testing/golden_cases.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace live_fixtures {

namespace fs = std::filesystem;
using Json = nlohmann::json;

enum class Mode { kWhole, kChunks, kPerWorker };

inline std::string ModeName(Mode mode) {
  switch (mode) {
    case Mode::kWhole:
      return "whole";
    case Mode::kChunks:
      return "chunks";
    case Mode::kPerWorker:
      return "per_worker";
  }
  return "?";
}

// What one replay reads, and how its deployments are named.
struct FixtureSet {
  std::string name;                // [A-Za-z0-9_], for test names and directories
  fs::path root;                   // the files' paths below it are kept live
  std::vector<std::string> files;  // relative to root, sorted
  std::map<std::string, std::string> labels;
  std::string deployment_from;
};

inline std::string Identifier(const std::string& text) {
  std::string out = text;
  for (char& ch : out) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return out;
}

// Regular files below `dir` (relative to `root`), sorted.
inline std::vector<std::string> FilesBelow(const fs::path& root, const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) out.push_back(fs::relative(entry.path(), root).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The golden cases and examples/ as found on disk now.
inline std::vector<FixtureSet> FixtureSets() {
  std::vector<FixtureSet> sets;
  const fs::path golden = fs::path(SourceDir()) / "tests" / "golden";
  std::set<std::string> covered;
  for (const GoldenCase& c : GoldenCases()) {
    if (!fs::exists(golden / c.path)) continue;  // golden_counts_test.cc reports it
    FixtureSet set{Identifier(c.path), golden, {}, c.labels, c.deployment_from};
    set.files = fs::is_directory(golden / c.path) ? FilesBelow(golden, golden / c.path)
                                                  : std::vector<std::string>{c.path};
    if (set.labels.count("deployment") == 0 && set.deployment_from.empty()) {
      set.labels["deployment"] = set.name;
    }
    covered.insert(set.files.begin(), set.files.end());
    sets.push_back(std::move(set));
  }
  for (const std::string& file : FilesBelow(golden, golden)) {
    if (file.rfind("tools/", 0) == 0 || fs::path(file).extension() != ".log") continue;
    if (covered.count(file) != 0) continue;
    sets.push_back({Identifier(file), golden, {file}, {{"deployment", Identifier(file)}}, ""});
  }
  // examples/: one deployment per subdirectory (README, `make demo`).
  const fs::path examples = fs::path(SourceDir()) / "examples";
  FixtureSet demo{"examples", examples, {}, {}, R"(/([^/]+)/[^/]+$)"};
  for (const auto& entry : fs::directory_iterator(examples)) {
    if (!entry.is_directory()) continue;
    for (std::string& file : FilesBelow(examples, entry.path())) demo.files.push_back(file);
  }
  std::sort(demo.files.begin(), demo.files.end());
  if (!demo.files.empty()) sets.push_back(std::move(demo));
  return sets;
}

struct LiveCase {
  FixtureSet set;
  Mode mode;
  std::string Name() const { return set.name + "_" + ModeName(mode); }
};

// gtest prints the parameter as its name, not its bytes.
inline void PrintTo(const LiveCase& c, std::ostream* out) { *out << c.Name(); }

inline std::vector<LiveCase> LiveCases() {
  std::vector<LiveCase> out;
  for (const FixtureSet& set : FixtureSets()) {
    out.push_back({set, Mode::kWhole});
    out.push_back({set, Mode::kChunks});
    if (set.files.size() > 1) out.push_back({set, Mode::kPerWorker});
  }
  return out;
}

// ---------------------------------------------------------------------------
// Comparing incidents.

// The last revision of each incident id, in order of first appearance.
inline std::map<std::string, Json> LastRevisions(const std::vector<Json>& lines) {
  std::map<std::string, Json> out;
  for (const Json& j : lines) out[j["incident_id"].get<std::string>()] = j;
  return out;
}

inline std::vector<Json> JsonLines(const std::string& text) {
  std::vector<Json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '{') out.push_back(Json::parse(line, nullptr, false));
  }
  return out;
}

// What a user compares: everything but the revision count, with source paths
// below the set's root and times only where replay has one.
inline Json Comparable(Json j, const std::string& root, const Json* replay) {
  j.erase("revision");
  auto strip = [&](Json& source) {
    std::string s = source.get<std::string>();
    if (s.rfind(root, 0) == 0) source = s.substr(root.size());
  };
  for (Json& e : j["evidence"]) strip(e["source"]);
  for (Json& stage : j["stages"]) {
    for (Json& e : stage["evidence"]) strip(e["source"]);
  }
  if (j.contains("consequences")) {
    for (Json& c : j["consequences"]) {
      if (c.contains("evidence")) strip(c["evidence"]["source"]);
    }
  }
  for (const char* time : {"first_seen", "last_seen"}) {
    if (replay != nullptr && (*replay)[time].is_null()) j[time] = nullptr;
  }
  return j;
}

// The fields the issue names: the id and what the incident says failed.
inline Json Key(const Json& j) {
  return {{"incident_id", j["incident_id"]},
          {"rule", j["rule"]},
          {"class", j["class"]},
          {"confidence", j["confidence"]},
          {"deployment", j["deployment"]},
          {"expected", j["workers"]["expected"]},
          {"affected", j["workers"]["affected"]},
          {"ranks", j["workers"]["ranks"]},
          {"identical", j["identical"]}};
}

// ---------------------------------------------------------------------------
// How a set is written (chunks, per_worker): appends in order, each followed
// by a pause.

struct Append {
  size_t file;        // index into the set's files
  std::string bytes;  // appended to it
  int pause_ms;       // before the next append
};

// A sortable time of a line ("MM-DD HH:MM:SS.frac" from a vLLM header, an
// RFC 3339 time, an SGLang header), "" when it has none.
inline std::string TimeOf(const std::string& line) {
  static const std::regex kTime(R"((\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[.,](\d+))?)");
  std::smatch m;
  if (!std::regex_search(line, m, kTime)) return "";
  std::string frac = m[3].str();
  frac.resize(9, '0');
  return m[1].str() + " " + m[2].str() + "." + frac;
}

// Every file cut at random offsets; the next piece comes from a file drawn
// in proportion to what it has left, so all files progress together.
inline std::vector<Append> ChunkAppends(const std::vector<std::string>& contents,
                                        const std::string& seed) {
  std::mt19937 random(static_cast<uint32_t>(std::hash<std::string>{}(seed)));
  std::vector<size_t> done(contents.size(), 0);
  std::vector<Append> out;
  for (;;) {
    std::vector<double> left;
    for (size_t i = 0; i < contents.size(); ++i) left.push_back(contents[i].size() - done[i]);
    if (std::all_of(left.begin(), left.end(), [](double n) { return n == 0; })) break;
    size_t i = std::discrete_distribution<size_t>(left.begin(), left.end())(random);
    size_t n = std::min<size_t>(std::uniform_int_distribution<size_t>(1, 3000)(random),
                                contents[i].size() - done[i]);
    out.push_back(
        {i, contents[i].substr(done[i], n), std::uniform_int_distribution<int>(1, 15)(random)});
    done[i] += n;
  }
  return out;
}

// All files line by line, the earliest line (by its own time, else the time
// of its file's line before it) first; ties go to the first file; 2 ms after
// every 8th line.
inline std::vector<Append> PerWorkerAppends(const std::vector<std::string>& contents) {
  struct File {
    std::vector<std::string> lines;  // each with its '\n' (the last maybe without)
    std::vector<std::string> times;
    size_t next = 0;
  };
  std::vector<File> files(contents.size());
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& text = contents[i];
    std::string time;
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      end = end == std::string::npos ? text.size() : end + 1;
      files[i].lines.push_back(text.substr(at, end - at));
      if (std::string t = TimeOf(files[i].lines.back()); !t.empty()) time = t;
      files[i].times.push_back(time);
      at = end;
    }
  }
  std::vector<Append> out;
  for (size_t written = 0;; ++written) {
    size_t first = files.size();
    for (size_t i = 0; i < files.size(); ++i) {
      const File& f = files[i];
      if (f.next == f.lines.size()) continue;
      if (first == files.size() || f.times[f.next] < files[first].times[files[first].next]) {
        first = i;
      }
    }
    if (first == files.size()) break;
    out.push_back({first, files[first].lines[files[first].next++], written % 8 == 7 ? 2 : 0});
  }
  return out;
}

}  // namespace live_fixtures
}  // namespace fingerprintd::testing
