// Replay: historical logs through the same parse -> rules -> correlate path as
// the live daemon. Files are read with zlib's gz* API, which reads gzip and
// plain files alike, so kubelet's rotated `.gz` pieces need no special case.
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "fingerprintd/source.h"

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

// `deployment_from` is the compiled --deployment-from pattern, or null.
std::string DeploymentFor(const ReplayOptions& options, const RE2* deployment_from,
                          const std::string& path, const std::string& fallback) {
  auto label = options.labels.find("deployment");
  if (label != options.labels.end()) return label->second;
  if (deployment_from != nullptr) {
    const RE2& re = *deployment_from;
    int groups = re.NumberOfCapturingGroups();
    std::vector<std::string> values(groups);
    std::vector<RE2::Arg> args(groups);
    std::vector<RE2::Arg*> arg_ptrs(groups);
    for (int i = 0; i < groups; ++i) {
      args[i] = &values[i];
      arg_ptrs[i] = &args[i];
    }
    if (groups > 0 && RE2::PartialMatchN(path, re, arg_ptrs.data(), groups)) {
      std::string out;
      for (const std::string& v : values) {
        if (v.empty()) continue;
        if (!out.empty()) out += "/";
        out += v;
      }
      if (!out.empty()) return out;
    }
  }
  // Kubernetes: /var/log/pods/<namespace>_<pod>_<uid>/<container>/N.log
  static const RE2 kPodPath(R"(/var/log/pods/([^_/]+)_([^_/]+)_[^/]+/)");
  std::string ns, pod;
  if (RE2::PartialMatch(path, kPodPath, &ns, &pod)) return ns + "/" + pod;
  return fallback;
}

int YearOfMtime(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return 0;
  std::tm tm{};
  time_t t = st.st_mtime;
  if (gmtime_r(&t, &tm) == nullptr) return 0;
  return tm.tm_year + 1900;
}

// Collects files under a directory, recursively, sorted by path.
Status ListDirectory(const std::string& dir, std::vector<std::string>* out) {
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) return NotFoundError(dir + ": " + ec.message());
  std::vector<std::string> files;
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return NotFoundError(dir + ": " + ec.message());
    std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  out->insert(out->end(), files.begin(), files.end());
  return OkStatus();
}

}  // namespace

Status ReadLines(const ReplaySource& source, size_t max_line_bytes, PipelineEvents& events,
                 const LineCallback& on_line, ReplayStats* stats, const ProgressCallback& on_chunk,
                 size_t chunk_bytes) {
  LineSplitter splitter(max_line_bytes, events);
  std::string buffer(chunk_bytes, '\0');
  auto counted = [&](std::string_view line) {
    on_line(line);
    ++stats->lines;
  };
  for (const std::string& piece : source.pieces) {
    gzFile in = piece == "-" ? gzdopen(dup(0), "rb") : gzopen(piece.c_str(), "rb");
    if (in == nullptr) {
      splitter.Finish(counted);
      return NotFoundError(piece + ": cannot open: " + std::strerror(errno));
    }
    gzbuffer(in, 256 << 10);
    ++stats->files;
    while (true) {
      int n = gzread(in, buffer.data(), static_cast<unsigned>(buffer.size()));
      if (n < 0) {
        int err = 0;
        std::string message = gzerror(in, &err);
        gzclose(in);
        // Keep what was read: a truncated .gz still yields its lines.
        splitter.Finish(counted);
        return DataLossError(piece + ": read error after " + std::to_string(stats->bytes) +
                             " bytes: " + message);
      }
      if (n == 0) break;
      stats->bytes += static_cast<uint64_t>(n);
      splitter.Append(std::string_view(buffer.data(), static_cast<size_t>(n)), counted);
      if (on_chunk) on_chunk(*stats, source.name);
    }
    gzclose(in);
  }
  splitter.Finish(counted);
  return OkStatus();
}

StatusOr<std::vector<ReplaySource>> PlanReplay(const ReplayOptions& options) {
  if (options.paths.empty()) return InvalidArgumentError("replay: no input (give PATH or -)");
  std::unique_ptr<RE2> deployment_from;
  if (!options.deployment_from.empty()) {
    RE2::Options re_options;
    re_options.set_log_errors(false);
    deployment_from = std::make_unique<RE2>(options.deployment_from, re_options);
    if (!deployment_from->ok()) {
      return InvalidArgumentError("--deployment-from: invalid RE2 pattern: " +
                                  deployment_from->error());
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
      source.deployment = DeploymentFor(options, deployment_from.get(), file, fallback);
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
  return sources;
}

namespace {

// The --label k=v labels except `deployment`, which names the deployment.
std::map<std::string, std::string> StaticLabels(const ReplayOptions& options) {
  std::map<std::string, std::string> labels = options.labels;
  labels.erase("deployment");
  return labels;
}

// Replays `sources` in order through one correlator into `sink`.
Status ReplayGroup(const std::vector<const ReplaySource*>& sources, const ReplayOptions& options,
                   const std::shared_ptr<const rules::RuleSet>& rules, PipelineEvents& events,
                   correlate::IncidentSink& sink, const ProgressCallback& on_chunk,
                   ReplayStats* stats) {
  correlate::Correlator correlator(rules, events, sink);
  Status first_error;
  for (const ReplaySource* source : sources) {
    uint32_t id = correlator.AddSource(source->name, source->deployment, StaticLabels(options));
    parse::ParserOptions parser_options = options.parser;
    if (!source->pieces.empty() && source->pieces.back() != "-") {
      parser_options.mtime_year = YearOfMtime(source->pieces.back());
    }
    rules::RuleEngine engine(rules, id, events, correlator);
    parse::SourceParser parser(id, source->name, parser_options, events, engine);
    Status s = ReadLines(
        *source, parser_options.max_line_bytes, events,
        [&parser](std::string_view line) { parser.Feed(line); }, stats, on_chunk,
        options.read_chunk_bytes);
    parser.Finish();
    engine.Finish();
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  correlator.Finish();
  return first_error;
}

// Serialises incidents from several replay threads into the caller's sink.
class LockedSink final : public correlate::IncidentSink {
 public:
  explicit LockedSink(correlate::IncidentSink& next) : next_(next) {}
  void OnIncident(const correlate::Incident& incident) override {
    std::lock_guard<std::mutex> lock(mu_);
    next_.OnIncident(incident);
  }

 private:
  std::mutex mu_;
  correlate::IncidentSink& next_;
};

}  // namespace

// Correlation only needs the files of one deployment together, so each
// deployment is replayed through its own correlator, and with several threads
// each takes whole deployments from a shared queue. Incident ids do not depend
// on the thread and callers sort the final incidents, so the output is the
// same for any thread count.
Status Replay(const ReplayOptions& options, std::shared_ptr<const rules::RuleSet> rules,
              PipelineEvents& events, correlate::IncidentSink& sink, ReplayStats* stats) {
  StatusOr<std::vector<ReplaySource>> plan = PlanReplay(options);
  if (!plan.ok()) return plan.status();
  // Deployments in the order they first appear, each with its sources in order.
  std::vector<std::vector<const ReplaySource*>> groups;
  std::map<std::string, size_t> group_of;
  for (const ReplaySource& source : *plan) {
    auto [it, inserted] = group_of.emplace(source.deployment, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(&source);
  }
  size_t threads = std::min<size_t>(std::max<size_t>(options.threads, 1), groups.size());
  if (threads <= 1) {
    // One deployment at a time, each with a fresh correlator: memory is
    // bounded by the largest deployment, not by the archive.
    Status first_error;
    for (const auto& group : groups) {
      Status s = ReplayGroup(group, options, rules, events, sink, options.progress, stats);
      if (!s.ok() && first_error.ok()) first_error = s;
    }
    return first_error;
  }

  LockedSink locked(sink);
  std::mutex progress_mu;
  ReplayStats totals;
  std::atomic<size_t> next_group{0};
  std::vector<Status> errors(groups.size());
  std::vector<ReplayStats> thread_stats(threads);
  auto work = [&](size_t t) {
    ReplayStats reported;  // this thread's share already added to `totals`
    ProgressCallback on_chunk = [&](const ReplayStats& mine, const std::string& source) {
      std::lock_guard<std::mutex> lock(progress_mu);
      totals.bytes += mine.bytes - reported.bytes;
      totals.lines += mine.lines - reported.lines;
      reported = mine;
      if (options.progress) options.progress(totals, source);
    };
    for (size_t g = next_group++; g < groups.size(); g = next_group++) {
      errors[g] =
          ReplayGroup(groups[g], options, rules, events, locked, on_chunk, &thread_stats[t]);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (std::thread& thread : pool) thread.join();
  for (const ReplayStats& s : thread_stats) {
    stats->files += s.files;
    stats->lines += s.lines;
    stats->bytes += s.bytes;
  }
  for (const Status& s : errors) {
    if (!s.ok()) return s;
  }
  return OkStatus();
}

void ReplayText(std::string_view text, const std::string& name, const std::string& deployment,
                const parse::ParserOptions& parser_options,
                std::shared_ptr<const rules::RuleSet> rules, PipelineEvents& events,
                correlate::IncidentSink& sink) {
  correlate::Correlator correlator(rules, events, sink);
  uint32_t id = correlator.AddSource(name, deployment);
  rules::RuleEngine engine(rules, id, events, correlator);
  parse::SourceParser parser(id, name, parser_options, events, engine);
  LineSplitter splitter(parser_options.max_line_bytes, events);
  auto on_line = [&](std::string_view line) { parser.Feed(line); };
  splitter.Append(text, on_line);
  splitter.Finish(on_line);
  parser.Finish();
  engine.Finish();
  correlator.Finish();
}

}  // namespace fingerprintd::source
