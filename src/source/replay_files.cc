// Replay inputs: expands paths into sources (directories, rotated pieces,
// deployment naming) and reads a source's pieces as lines. Files are read
// with zlib's gz* API (source/replay_reader.h), which reads gzip and plain
// files alike, so kubelet's rotated `.gz` pieces need no special case.
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

#include "common/hash.h"
#include "common/line_splitter.h"
#include "common/re2_limits.h"
#include "fingerprintd/source.h"
#include "source/replay_reader.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;

// Splits a rotated file name into the live name and its position among the
// pieces: `0.log.20260104-143410.gz` -> ("0.log", ts), `x-json.log.2.gz` ->
// ("x-json.log", -2), `0.log` -> ("0.log", live).
struct RotationKey {
  std::string base;
  int kind = 2;       // 0 = kubelet timestamp, 1 = docker number, 2 = live
  std::string stamp;  // kubelet timestamp
  long number = 0;    // docker number (higher = older)
};

RotationKey RotationOf(const std::string& filename) {
  static const RE2 kKubelet(R"((.*\.log)\.(\d{8}-\d{6})(?:\.gz)?)");
  static const RE2 kDocker(R"((.*\.log)\.(\d{1,4})(?:\.gz)?)");
  RotationKey key;
  std::string stamp;
  long number = 0;
  if (RE2::FullMatch(filename, kKubelet, &key.base, &stamp)) {
    key.kind = 0;
    key.stamp = stamp;
  } else if (RE2::FullMatch(filename, kDocker, &key.base, &number)) {
    key.kind = 1;
    key.number = number;
  } else {
    key.base = filename;
    if (key.base.size() > 3 && key.base.compare(key.base.size() - 3, 3, ".gz") == 0) {
      key.base.resize(key.base.size() - 3);
    }
  }
  return key;
}

bool PieceBefore(const RotationKey& a, const RotationKey& b) {
  if (a.kind != b.kind) return a.kind < b.kind;
  if (a.kind == 0) return a.stamp < b.stamp;
  if (a.kind == 1) return a.number > b.number;
  return false;
}

// Walks one directory for ListDirectory. `seen_dirs` holds the real
// (canonical) directories entered so far: a symlink back to an ancestor ends
// there instead of looping, and a directory reached through two links is read
// once. `files` gets (path as listed, canonical path).
Status WalkDirectory(const fs::path& dir, std::set<fs::path>* seen_dirs,
                     std::vector<std::pair<std::string, fs::path>>* files) {
  std::error_code ec;
  fs::path real = fs::canonical(dir, ec);
  if (ec) return NotFoundError(dir.string() + ": cannot read directory: " + ec.message());
  if (!seen_dirs->insert(real).second) return OkStatus();
  fs::directory_iterator it(dir, ec);
  if (ec) return NotFoundError(dir.string() + ": cannot read directory: " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return NotFoundError(dir.string() + ": cannot read directory: " + ec.message());
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    if (name.empty() || name[0] == '.') continue;
    fs::file_status st = fs::status(path, ec);  // follows symlinks
    if (ec) {
      // A dangling link (a log rotated away under a `current` link) is not input.
      if (fs::is_symlink(it->symlink_status(ec))) continue;
      return NotFoundError(path.string() + ": " + ec.message());
    }
    if (fs::is_directory(st)) {
      if (Status s = WalkDirectory(path, seen_dirs, files); !s.ok()) return s;
    } else if (fs::is_regular_file(st)) {
      fs::path file_real = fs::canonical(path, ec);
      if (ec) return NotFoundError(path.string() + ": " + ec.message());
      files->emplace_back(path.string(), std::move(file_real));
    }
  }
  return OkStatus();
}

// Collects the regular files under a directory, recursively, sorted by path;
// symlinked directories are followed, each real directory and file once (the
// first path in sorted order names it). Names starting with '.' are skipped.
// A directory or subdirectory that cannot be read is an error naming it.
Status ListDirectory(const std::string& dir, std::vector<std::string>* out) {
  std::set<fs::path> seen_dirs;
  std::vector<std::pair<std::string, fs::path>> files;
  if (Status s = WalkDirectory(dir, &seen_dirs, &files); !s.ok()) return s;
  std::sort(files.begin(), files.end());
  std::set<fs::path> seen_files;
  for (auto& [path, real] : files) {
    if (seen_files.insert(real).second) out->push_back(std::move(path));
  }
  return OkStatus();
}

}  // namespace

Status ReadLines(const ReplaySource& source, size_t max_line_bytes, PipelineEvents& events,
                 const LineCallback& on_line, ReplayStats* stats, const ProgressCallback& on_chunk,
                 size_t chunk_bytes) {
  LineSplitter splitter(max_line_bytes, events);
  auto counted = [&](std::string_view line, uint64_t) {
    on_line(line);
    ++stats->lines;
  };
  Status s = ReadPieces(
      source, [&](std::string_view bytes) { splitter.Append(bytes, counted); }, stats,
      [&](const ReplayStats& totals, const std::string& name) {
        if (on_chunk) on_chunk(totals, name);
      },
      chunk_bytes);
  splitter.Finish(counted);
  return s;
}

uint64_t ReplayInputBytes(const std::vector<ReplaySource>& plan) {
  uint64_t total = 0;
  for (const ReplaySource& source : plan) {
    for (const std::string& piece : source.pieces) {
      std::error_code ec;
      if (piece == "-") continue;
      const uintmax_t size = std::filesystem::file_size(piece, ec);
      if (!ec) total += size;
    }
  }
  return total;
}

StatusOr<std::vector<ReplaySource>> PlanReplay(const ReplayOptions& options) {
  if (options.paths.empty()) return InvalidArgumentError("replay: no input (give PATH or -)");
  if (options.shard_count == 0 || options.shard_index >= options.shard_count) {
    return InvalidArgumentError("--shard: index " + std::to_string(options.shard_index) +
                                " is not below the count " + std::to_string(options.shard_count));
  }
  std::unique_ptr<RE2> deployment_from;
  if (!options.deployment_from.empty()) {
    deployment_from = std::make_unique<RE2>(options.deployment_from, BoundedRe2Options());
    if (std::string problem = Re2Problem(*deployment_from); !problem.empty()) {
      return InvalidArgumentError("--deployment-from: " + problem);
    }
    if (deployment_from->NumberOfCapturingGroups() == 0) {
      return InvalidArgumentError("--deployment-from: '" + options.deployment_from +
                                  "' has no capture group; its groups name the deployment, "
                                  "e.g. '/pods/([^/]+)/'");
    }
  }
  // (file, deployment fallback) in argument order, directories expanded.
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& path : options.paths) {
    if (path == "-") {
      files.emplace_back("-", "stdin");
      continue;
    }
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return NotFoundError(path + ": no such file or directory");
    if (fs::is_directory(st)) {
      std::vector<std::string> listed;
      if (Status s = ListDirectory(path, &listed); !s.ok()) return s;
      for (const std::string& f : listed) {
        files.emplace_back(f, fs::path(f).parent_path().string());
      }
    } else {
      fs::path p(path);
      files.emplace_back(path, (p.parent_path() / RotationOf(p.filename().string()).base).string());
    }
  }
  // Join rotated pieces of one stream; keep first-appearance order of streams.
  std::vector<ReplaySource> sources;
  std::map<std::string, size_t> index;
  std::map<std::string, std::vector<std::pair<RotationKey, std::string>>> pieces;
  for (const auto& [file, fallback] : files) {
    std::string stream_key = file;
    RotationKey key;
    if (file != "-") {
      fs::path p(file);
      key = RotationOf(p.filename().string());
      stream_key = (p.parent_path() / key.base).string();
    }
    auto [it, inserted] = index.emplace(stream_key, sources.size());
    if (inserted) {
      ReplaySource source;
      source.name = stream_key;
      source.deployment = DeploymentForPath(options.labels, deployment_from.get(), file, fallback,
                                            &source.deployment_from_matched);
      sources.push_back(std::move(source));
    }
    pieces[stream_key].emplace_back(key, file);
  }
  for (ReplaySource& source : sources) {
    auto& list = pieces[source.name];
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) { return PieceBefore(a.first, b.first); });
    for (const auto& [key, file] : list) source.pieces.push_back(file);
  }
  if (options.shard_count > 1) {
    std::erase_if(sources, [&](const ReplaySource& source) {
      return ShardOf(source.deployment, options.shard_count) != options.shard_index;
    });
  }
  return sources;
}

uint32_t ShardOf(std::string_view deployment, uint32_t shard_count) {
  return static_cast<uint32_t>(Fnv1a64({deployment}) % std::max<uint32_t>(shard_count, 1));
}

int64_t FileMtimeMicros(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000;
}

std::string DeploymentForPath(const std::map<std::string, std::string>& labels,
                              const RE2* deployment_from, const std::string& path,
                              const std::string& fallback, bool* matched) {
  auto label = labels.find("deployment");
  if (label != labels.end()) return label->second;
  if (deployment_from != nullptr) {
    const int groups = deployment_from->NumberOfCapturingGroups();
    std::vector<std::string> values(groups);
    std::vector<RE2::Arg> args(groups);
    std::vector<RE2::Arg*> arg_ptrs(groups);
    for (int i = 0; i < groups; ++i) {
      args[i] = &values[i];
      arg_ptrs[i] = &args[i];
    }
    if (groups > 0 && RE2::PartialMatchN(path, *deployment_from, arg_ptrs.data(), groups)) {
      std::string out;
      for (const std::string& v : values) {
        if (v.empty()) continue;
        if (!out.empty()) out += "/";
        out += v;
      }
      if (!out.empty()) {
        if (matched != nullptr) *matched = true;
        return out;
      }
    }
  }
  // Kubernetes: /var/log/pods/<namespace>_<pod>_<uid>/<container>/N.log
  static const RE2 kPodPath(R"(/var/log/pods/([^_/]+)_([^_/]+)_[^/]+/)");
  std::string ns, pod;
  if (RE2::PartialMatch(path, kPodPath, &ns, &pod)) return ns + "/" + pod;
  return fallback;
}

}  // namespace fingerprintd::source
