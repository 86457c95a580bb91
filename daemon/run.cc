// `fingerprintd run`: the live daemon. One boost::asio::io_context thread owns
// everything: the file sources (a Tailer each, woken by inotify through a
// posix::stream_descriptor, polled as a fallback, their globs rescanned on a
// timer), the Pipeline they feed, the timer that advances it on wall time, the
// checkpoint timer and the signals. The parse/rules/correlate stages stay
// synchronous and clock-free; only this file reads the clock.
//
// Shapes meant for the next pieces (sockets, /metrics, Alertmanager): a source
// is a LiveSource (Start/Stop/AppendCheckpoint on the io_context), an incident
// consumer is a correlate::IncidentSink added to the FanoutSink, counters go
// through PipelineEvents (DaemonEvents here; sink/metrics later).
//
// Shutdown (SIGTERM/SIGINT): stop reading, Advance once (decides what the
// wall clock allows), save the checkpoint, return from run(). Finish() is NOT
// called: it would close every open incident, and a restart must resume them
// with their ids. SIGHUP: the config and the rules are loaded again; if either
// fails the old ones keep running (logged, counted); if both load, the engine
// is rebuilt from an in-memory checkpoint (the same path as a restart), so the
// new rules see exactly the state the old ones left.
#include <re2/re2.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "commands.h"
#include "config/config.h"
#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline.h"
#include "fingerprintd/rules.h"
#include "sd_notify.h"
#include "sink/jsonl_sink.h"
#include "source/checkpoint_store.h"
#include "source/glob.h"
#include "source/inotify_watcher.h"
#include "source/tailer.h"

namespace fingerprintd::daemon {

namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
// The wall-clock timer advances the pipeline every kAdvanceEvery while lines
// were read within kBusyFor, and every kQuietAdvanceEvery after that; the
// first read after a quiet spell re-arms it at kAdvanceEvery (Wake). So a
// failure is decided within a tick of its last line, and 1,000 quiet files
// cost a pass over their state every 2 s instead of ten times a second. What
// waits on the quiet cadence is only ever late by it: a window closing, a
// partial line's timeout, an event held for a silent source.
constexpr auto kAdvanceEvery = milliseconds(100);
constexpr int64_t kBusyForUs = 10'000'000;
constexpr auto kQuietAdvanceEvery = milliseconds(2000);

int64_t WallNowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int CurrentYear() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  return tm.tm_year + 1900;
}

milliseconds Millis(int64_t us) { return milliseconds(std::max<int64_t>(1, us / 1000)); }

// Counters of everything the pipeline and the tailers report; sink/metrics
// will export the same calls. Atomic so an HTTP thread may read them later.
class DaemonEvents final : public PipelineEvents {
 public:
  void LineRead(std::string_view, uint64_t bytes) override {
    lines.fetch_add(1, std::memory_order_relaxed);
    this->bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  void LineDropped(DropReason) override { dropped.fetch_add(1, std::memory_order_relaxed); }
  void TimeGuessed(TimeFallback) override {}
  void TracebackAssembled() override {}
  void RuleMatched(std::string_view, std::string_view) override {}
  void IncidentOpened(std::string_view, std::string_view, std::string_view) override {}
  void IncidentUpdated(std::string_view) override {}
  void FileRotated() override { rotations.fetch_add(1, std::memory_order_relaxed); }
  void FileTruncated() override { truncations.fetch_add(1, std::memory_order_relaxed); }

  std::atomic<uint64_t> lines{0}, bytes{0}, dropped{0}, rotations{0}, truncations{0};
  std::atomic<uint64_t> checkpoint_failures{0}, checkpoints_ignored{0}, reload_failures{0};
};

// Hands every incident change to each sink in turn; logs it on stderr.
class FanoutSink final : public correlate::IncidentSink {
 public:
  void Add(correlate::IncidentSink* sink) { sinks_.push_back(sink); }
  void OnIncident(correlate::IncidentChange change, const correlate::Incident& incident) override {
    spdlog::info("incident {} {} rule={} deployment={} workers={}/{} revision={}{}{}",
                 incident.incident_id, correlate::IncidentChangeName(change), incident.rule->id,
                 incident.deployment, incident.affected, incident.expected, incident.revision,
                 change == correlate::IncidentChange::kClosed ? " reason=" : "",
                 change == correlate::IncidentChange::kClosed
                     ? correlate::CloseReasonName(incident.closed)
                     : "");
    for (correlate::IncidentSink* sink : sinks_) sink->OnIncident(change, incident);
    changed = true;
  }
  bool changed = false;  // an incident was written since the last checkpoint

 private:
  std::vector<correlate::IncidentSink*> sinks_;
};

// A source of lines living on the io_context (files now; sockets next).
class LiveSource {
 public:
  virtual ~LiveSource() = default;
  virtual Status Start() = 0;
  // Stops every pending wait; no callback runs after it.
  virtual void Stop() = 0;
  // Periodic work on the daemon's timer (partial-line ages, fallback polls).
  virtual void Tick(int64_t now_us) = 0;
  virtual void Rescan(int64_t now_us) = 0;
  virtual void AppendCheckpoint(const Pipeline& pipeline,
                                std::vector<source::SourceCheckpoint>* out) const = 0;
};

using RestoredSources = std::map<std::string, source::SourceCheckpoint>;

// One `type: file` source: a Tailer over its globs feeding the pipeline.
class FileSource final : public LiveSource, public source::TailerClient {
 public:
  FileSource(asio::io_context& io, const config::SourceConfig& config,
             const config::TailerConfig& tailer_config, Pipeline& pipeline, PipelineEvents& events,
             const RestoredSources& restored, std::function<void()> on_read)
      : io_(io),
        on_read_(std::move(on_read)),
        config_(config),
        tailer_config_(tailer_config),
        pipeline_(pipeline),
        restored_(restored),
        descriptor_(io) {
    if (!config.deployment_from.empty())
      deployment_from_ = std::make_unique<RE2>(config.deployment_from);
    source::TailerOptions options;
    options.paths = config.paths;
    options.exclude = config.exclude;
    options.ignore_older_us = config.ignore_older_us;
    options.start_at_end = config.start_at == config::StartAt::kEnd;
    options.max_line_bytes = tailer_config.max_line_bytes;
    options.partial_line_timeout_us = tailer_config.partial_line_timeout_us;
    options.max_files = tailer_config.max_files;
    tailer_ = std::make_unique<source::Tailer>(options, events, *this);
  }

  Status Start() override {
    if (tailer_config_.inotify) {
      auto watcher = source::InotifyWatcher::Create();
      if (watcher.ok()) {
        watcher_ = std::move(*watcher);
        tailer_->SetWatcher(watcher_.get());
        descriptor_.assign(::dup(watcher_->fd()));
      } else {
        spdlog::warn("inotify unavailable ({}); polling every {} ms", watcher.status().message(),
                     tailer_config_.poll_interval_us / 1000);
      }
    }
    int64_t now = WallNowMicros();
    tailer_->Rescan(now);
    last_rescan_us_ = last_poll_us_ = now;
    spdlog::info("file source {}: {} file(s) at start", config_.paths.front(),
                 tailer_->Streams().size());
    WaitForInotify();
    return OkStatus();
  }

  void Stop() override {
    stopped_ = true;
    boost::system::error_code ec;
    descriptor_.cancel(ec);
    descriptor_.close(ec);
  }

  // Without inotify (or with its watches exhausted) files are polled every
  // poll_interval and globs rescanned every rescan_interval. With inotify
  // every directory of the globs is watched, so both are only a safety net,
  // run every safety_rescan_interval: a rescan walks every directory of the
  // globs, which for 1,000 pods is most of what an idle daemon would cost.
  bool Polling() const { return !watcher_ || watcher_->exhausted(); }

  void Tick(int64_t now_us) override {
    int64_t poll_every =
        Polling() ? tailer_config_.poll_interval_us : tailer_config_.safety_rescan_interval_us;
    if (tailer_->HasMoreToRead() || now_us - last_poll_us_ >= poll_every) {
      tailer_->Poll(now_us);
      last_poll_us_ = now_us;
    }
    tailer_->Tick(now_us);
  }

  void Rescan(int64_t now_us) override {
    if (!Polling() && now_us - last_rescan_us_ < tailer_config_.safety_rescan_interval_us) return;
    tailer_->Rescan(now_us);
    last_rescan_us_ = now_us;
  }

  void AppendCheckpoint(const Pipeline& pipeline,
                        std::vector<source::SourceCheckpoint>* out) const override {
    for (const auto& [stream, id] : ids_) {
      source::SourceCheckpoint& cp = out->emplace_back();
      cp.name = stream;
      cp.safe = pipeline.SafePosition(id);
      cp.pieces = tailer_->PiecesFor(stream, cp.safe.offset);
    }
  }

  // True when one of this source's globs matches `stream`.
  bool Matches(const std::string& stream) const {
    for (const std::string& glob : config_.paths) {
      std::string absolute =
          glob.starts_with("/") ? glob : (std::filesystem::current_path() / glob).string();
      if (source::GlobMatch(std::filesystem::path(absolute).lexically_normal().string(), stream)) {
        return true;
      }
    }
    return false;
  }

  // Registers `stream` with the pipeline (once); its checkpoint, if any, sets
  // where the pipeline expects it to resume.
  Pipeline::SourceId Register(const std::string& stream) {
    if (auto it = ids_.find(stream); it != ids_.end()) return it->second;
    SourceSpec spec;
    spec.name = stream;
    spec.deployment = config::DeploymentForPath(config_.labels, deployment_from_.get(), stream);
    spec.labels = config_.labels;
    spec.labels.erase("deployment");
    spec.parser.envelope = config_.format;
    spec.parser.max_line_bytes = tailer_config_.max_line_bytes;
    spec.parser.now_us = WallNowMicros();
    spec.parser.current_year = CurrentYear();
    if (auto it = restored_.find(stream); it != restored_.end()) spec.start = it->second.safe;
    Pipeline::SourceId id = pipeline_.AddSource(spec);
    ids_[stream] = id;
    spdlog::info("tailing {} (deployment {})", stream, spec.deployment);
    return id;
  }

  // TailerClient
  std::optional<source::StreamCheckpoint> OnOpen(const std::string& stream) override {
    Register(stream);
    auto it = restored_.find(stream);
    if (it == restored_.end()) return std::nullopt;
    spdlog::info("{}: resuming from its checkpoint at byte {}", stream, it->second.safe.offset);
    return source::StreamCheckpoint{it->second.pieces, it->second.safe.offset};
  }
  void OnLine(const std::string& stream, std::string_view line, uint64_t offset) override {
    auto it = ids_.find(stream);
    if (it != ids_.end()) pipeline_.Feed(it->second, line, offset);
  }
  void OnSwitched(const std::string& stream, bool truncated) override {
    spdlog::info("{}: {}; reading on from its byte 0", stream,
                 truncated ? "truncated (copytruncate)" : "rotated");
  }
  void OnEnded(const std::string& stream) override {
    spdlog::info("{} was deleted; read to its end", stream);
    auto it = ids_.find(stream);
    if (it != ids_.end()) pipeline_.EndSource(it->second);
  }

 private:
  void WaitForInotify() {
    if (!watcher_ || stopped_) return;
    descriptor_.async_wait(asio::posix::stream_descriptor::wait_read,
                           [this](const boost::system::error_code& ec) {
                             if (ec || stopped_) return;
                             tailer_->HandleInotify(WallNowMicros());
                             on_read_();
                             WaitForInotify();
                           });
  }

  asio::io_context& io_;
  std::function<void()> on_read_;  // after each inotify wake-up (Daemon::Wake)
  config::SourceConfig config_;
  config::TailerConfig tailer_config_;
  Pipeline& pipeline_;
  const RestoredSources& restored_;
  std::unique_ptr<RE2> deployment_from_;
  std::unique_ptr<source::InotifyWatcher> watcher_;
  std::unique_ptr<source::Tailer> tailer_;
  asio::posix::stream_descriptor descriptor_;
  std::map<std::string, Pipeline::SourceId> ids_;
  int64_t last_poll_us_ = 0;
  int64_t last_rescan_us_ = 0;
  bool stopped_ = false;
};

// The pipeline and the sources feeding it; rebuilt whole on SIGHUP.
struct Engine {
  std::unique_ptr<Pipeline> pipeline;
  RestoredSources restored;
  std::vector<std::unique_ptr<LiveSource>> sources;
};

class Daemon {
 public:
  Daemon(config::DaemonConfig config, std::shared_ptr<const rules::RuleSet> rules)
      : config_(std::move(config)),
        rules_(std::move(rules)),
        signals_(io_, SIGINT, SIGTERM, SIGHUP),
        advance_timer_(io_),
        rescan_timer_(io_),
        checkpoint_timer_(io_) {}

  int Run() {
    auto jsonl = sink::JsonlIncidentSink::Open(config_.incidents_path);
    if (!jsonl.ok()) {
      spdlog::error("incidents: {}", jsonl.status().message());
      return kExitUsage;
    }
    jsonl_ = std::move(*jsonl);
    fanout_.Add(jsonl_.get());
    std::optional<source::Checkpoint> checkpoint;
    if (!config_.checkpoint_dir.empty()) {
      store_ = std::make_unique<source::CheckpointStore>(config_.checkpoint_dir);
      if (Status s = store_->Lock(); !s.ok()) {
        spdlog::error("checkpoint_dir: {}", s.message());
        return kExitUsage;
      }
      auto loaded = store_->Load();
      if (loaded.ok()) {
        checkpoint = std::move(*loaded);
      } else if (loaded.status().code() != StatusCode::kNotFound) {
        events_.checkpoints_ignored.fetch_add(1);
        spdlog::warn("{}; ignored, starting from start_at", loaded.status().message());
      }
    } else {
      spdlog::warn("no checkpoint_dir: a restart starts from start_at and forgets open incidents");
    }
    if (Status s = StartEngine(checkpoint ? &*checkpoint : nullptr); !s.ok()) {
      spdlog::error("{}", s.message());
      return kExitUsage;
    }
    WaitForSignal();
    ScheduleAdvance();
    ScheduleRescan();
    ScheduleCheckpoint();
    spdlog::info("fingerprintd {} running: {} rule(s), incidents to {}", FINGERPRINTD_VERSION,
                 rules_->rules().size(),
                 config_.incidents_path == "-" ? "stdout" : config_.incidents_path);
    if (Status s = SdNotify("READY=1"); !s.ok()) spdlog::warn("{}", s.message());
    io_.run();
    spdlog::info("stopped: {} lines, {} bytes, {} rotation(s), {} truncation(s), {} dropped",
                 events_.lines.load(), events_.bytes.load(), events_.rotations.load(),
                 events_.truncations.load(), events_.dropped.load());
    return kExitOk;
  }

 private:
  Status StartEngine(const source::Checkpoint* checkpoint) {
    for (const config::SourceConfig& source : config_.sources) {
      if (source.type != config::SourceType::kFile) {
        return InvalidArgumentError(
            (config_.file.empty() ? std::string("source")
                                  : config_.file + ":" + std::to_string(source.line)) +
            ": sources of type " + std::string(config::SourceTypeName(source.type)) +
            " are not served yet (file sources only)");
      }
    }
    engine_ = std::make_unique<Engine>();
    Pipeline::Options options;
    options.correlator.window_us = config_.correlation_window_us;  // 0: each rule's own
    engine_->pipeline = std::make_unique<Pipeline>(rules_, options, events_, fanout_);
    std::vector<FileSource*> files;
    for (const config::SourceConfig& source : config_.sources) {
      auto file = std::make_unique<FileSource>(io_, source, config_.tailer, *engine_->pipeline,
                                               events_, engine_->restored, [this] { Wake(); });
      files.push_back(file.get());
      engine_->sources.push_back(std::move(file));
    }
    if (checkpoint) {
      // The checkpoint's sources are registered before the state is restored:
      // RestoreState registers the ones it does not know with default parser
      // options, and ours (envelope, line cap, year) must be the ones used.
      for (const auto& source : checkpoint->sources) engine_->restored[source.name] = source;
      for (const auto& source : checkpoint->sources) {
        for (FileSource* file : files) {
          if (file->Matches(source.name)) {
            file->Register(source.name);
            break;
          }
        }
      }
      if (Status s = engine_->pipeline->RestoreState(checkpoint->pipeline_state); !s.ok()) {
        events_.checkpoints_ignored.fetch_add(1);
        spdlog::warn("checkpoint state not restored ({}); starting from start_at", s.message());
        return StartEngine(nullptr);
      }
    }
    for (auto& source : engine_->sources) {
      if (Status s = source->Start(); !s.ok()) return s;
    }
    return OkStatus();
  }

  source::Checkpoint Snapshot() const {
    source::Checkpoint checkpoint;
    for (const auto& source : engine_->sources) {
      source->AppendCheckpoint(*engine_->pipeline, &checkpoint.sources);
    }
    checkpoint.pipeline_state = engine_->pipeline->SaveState();
    return checkpoint;
  }

  // Lines, rotations and truncations seen so far: when this has not moved and
  // no incident was written, the state is the last checkpoint's (an older
  // checkpoint stays a valid place to resume from), so it is not rebuilt.
  uint64_t Activity() const {
    return events_.lines.load() + events_.rotations.load() + events_.truncations.load();
  }

  void SaveCheckpoint(bool force = false) {
    uint64_t activity = Activity();
    if (!force && !fanout_.changed && activity == activity_at_checkpoint_) return;
    activity_at_checkpoint_ = activity;
    fanout_.changed = false;
    if (!store_) return;
    if (Status s = store_->Save(Snapshot()); !s.ok()) {
      events_.checkpoint_failures.fetch_add(1);
      spdlog::error("checkpoint: {}", s.message());
    }
  }

  // Arms the advance timer; a handler of an earlier arming (cancelled, or
  // already queued when Wake re-armed) sees a stale generation and returns.
  void ScheduleAdvance(milliseconds after = kAdvanceEvery) {
    quiet_ = after != kAdvanceEvery;
    advance_timer_.expires_after(after);
    advance_timer_.async_wait([this, generation = ++advance_generation_](
                                  const boost::system::error_code& ec) {
      if (ec || stopping_ || generation != advance_generation_) return;
      int64_t now = WallNowMicros();
      if (uint64_t activity = Activity(); activity != activity_at_tick_) {
        activity_at_tick_ = activity;
        last_activity_us_ = now;
      }
      for (auto& source : engine_->sources) source->Tick(now);
      engine_->pipeline->Advance(now);
      if (fanout_.changed) SaveCheckpoint();  // an incident was written: commit its lines
      ScheduleAdvance(now - last_activity_us_ < kBusyForUs ? kAdvanceEvery : kQuietAdvanceEvery);
    });
  }

  // A source read something: on the quiet cadence, advance at the next tick.
  void Wake() {
    if (quiet_ && !stopping_ && Activity() != activity_at_tick_) ScheduleAdvance();
  }

  void ScheduleRescan() {
    rescan_timer_.expires_after(Millis(config_.tailer.rescan_interval_us));
    rescan_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping_) return;
      int64_t now = WallNowMicros();
      for (auto& source : engine_->sources) source->Rescan(now);
      ScheduleRescan();
    });
  }

  void ScheduleCheckpoint() {
    checkpoint_timer_.expires_after(Millis(config_.checkpoint_interval_us));
    checkpoint_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping_) return;
      SaveCheckpoint();
      ScheduleCheckpoint();
    });
  }

  void WaitForSignal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      if (signo == SIGHUP) {
        if (Status s = SdNotify("RELOADING=1"); !s.ok()) spdlog::warn("{}", s.message());
        Reload();
        if (Status s = SdNotify("READY=1"); !s.ok()) spdlog::warn("{}", s.message());
        WaitForSignal();
        return;
      }
      spdlog::info("signal {}: stopping", signo);
      Shutdown();
    });
  }

  void Shutdown() {
    if (Status s = SdNotify("STOPPING=1"); !s.ok()) spdlog::warn("{}", s.message());
    stopping_ = true;
    for (auto& source : engine_->sources) source->Stop();
    engine_->pipeline->Advance(WallNowMicros());
    SaveCheckpoint(/*force=*/true);
    boost::system::error_code ec;
    advance_timer_.cancel();
    rescan_timer_.cancel();
    checkpoint_timer_.cancel();
    signals_.cancel(ec);
    io_.stop();
  }

  void Reload() {
    spdlog::info("SIGHUP: reloading config and rules");
    config::DaemonConfig next = config_;
    if (!config_.file.empty()) {
      auto loaded = config::LoadConfigFile(config_.file);
      if (!loaded.ok()) {
        events_.reload_failures.fetch_add(1);
        spdlog::error("reload: {}; keeping the running config and rules",
                      loaded.status().message());
        return;
      }
      next = std::move(*loaded);
      if (next.checkpoint_dir != config_.checkpoint_dir ||
          next.incidents_path != config_.incidents_path) {
        spdlog::warn("reload: checkpoint_dir and incidents.path changes need a restart; kept");
        next.checkpoint_dir = config_.checkpoint_dir;
        next.incidents_path = config_.incidents_path;
      }
    }
    auto rules =
        next.rules_dir.empty() ? rules::LoadEmbeddedRules() : rules::LoadRuleDir(next.rules_dir);
    if (!rules.ok()) {
      events_.reload_failures.fetch_add(1);
      spdlog::error("reload: rules: {}; keeping the running rules", rules.status().message());
      return;
    }
    source::Checkpoint snapshot = Snapshot();
    for (auto& source : engine_->sources) source->Stop();
    // Callbacks of the old sources may still be queued; they check their
    // stopped flag, so the engine is retired only after they had a chance to run.
    retired_.push_back(std::move(engine_));
    config_ = std::move(next);
    rules_ = std::move(*rules);
    if (Status s = StartEngine(&snapshot); !s.ok()) {
      events_.reload_failures.fetch_add(1);
      spdlog::error("reload: {}", s.message());
    }
    asio::post(io_, [this] { retired_.clear(); });
    spdlog::info("reloaded: {} rule(s)", rules_->rules().size());
  }

  config::DaemonConfig config_;
  std::shared_ptr<const rules::RuleSet> rules_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer advance_timer_;
  asio::steady_timer rescan_timer_;
  asio::steady_timer checkpoint_timer_;
  DaemonEvents events_;
  FanoutSink fanout_;
  std::unique_ptr<sink::JsonlIncidentSink> jsonl_;
  std::unique_ptr<source::CheckpointStore> store_;
  std::unique_ptr<Engine> engine_;
  std::vector<std::unique_ptr<Engine>> retired_;
  uint64_t activity_at_checkpoint_ = UINT64_MAX;
  uint64_t activity_at_tick_ = UINT64_MAX;
  int64_t last_activity_us_ = 0;
  uint64_t advance_generation_ = 0;
  bool quiet_ = false;
  bool stopping_ = false;
};

void SetUpLogging(const config::DaemonConfig& config) {
  auto logger = spdlog::stderr_logger_st("fingerprintd");
  spdlog::set_default_logger(logger);
  if (config.log_format == "json") {
    spdlog::set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","logger":"%n","msg":"%v"})",
                        spdlog::pattern_time_type::utc);
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
  spdlog::set_level(spdlog::level::from_str(config.log_level));
}

int RunDaemon(const RunCommands& commands) {
  StatusOr<config::DaemonConfig> config = commands.config_path.empty()
                                              ? config::ConfigFromFlags(commands.flags)
                                              : config::LoadConfigFile(commands.config_path);
  if (!config.ok()) {
    std::cerr << "fingerprintd run: " << config.status().message() << "\n";
    return kExitUsage;
  }
  SetUpLogging(*config);
  auto rules = config->rules_dir.empty() ? rules::LoadEmbeddedRules()
                                         : rules::LoadRuleDir(config->rules_dir);
  if (!rules.ok()) {
    spdlog::error("rules: {}", rules.status().message());
    return kExitUsage;
  }
  Daemon daemon(std::move(*config), std::move(*rules));
  return daemon.Run();
}

int RunConfigCheck(const std::string& path) {
  auto config = config::LoadConfigFile(path);
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return kExitUsage;
  }
  if (!config->rules_dir.empty()) {
    auto rules = rules::LoadRuleDir(config->rules_dir);
    if (!rules.ok()) {
      std::cerr << rules.status().message() << "\n";
      return kExitUsage;
    }
  }
  std::cout << path << ": ok, " << config->sources.size() << " source(s)\n";
  return kExitOk;
}

}  // namespace

void AddRunCommands(CLI::App& app, RunCommands* commands) {
  config::RunFlags& flags = commands->flags;
  CLI::App* run = app.add_subcommand(
      "run", "Run the daemon: tail files (globs) and write incidents as they are decided");
  run->add_option("--config", commands->config_path, "Config file (YAML); excludes the flags");
  run->add_option("--rules", flags.rules_dir, "Rule directory (default: embedded pack)");
  // One value per occurrence, so `--label a=b PATH` leaves PATH a positional.
  run->add_option("--label", flags.labels, "Source label k=v (deployment=NAME names it)")
      ->expected(1)
      ->allow_extra_args(false);
  run->add_option("--deployment-from", flags.deployment_from,
                  "RE2 over each path; its capture groups name the deployment");
  run->add_option("--checkpoint-dir", flags.checkpoint_dir,
                  "Keep checkpoints here (resume after a restart)");
  run->add_option("--incidents", flags.incidents, "JSONL incident log: - (stdout) or a file");
  run->add_option("--start-at", flags.start_at, "For files never seen: end or beginning")
      ->check(CLI::IsMember({"end", "beginning"}));
  run->add_option("--input-format", flags.format,
                  "Envelope: auto, plain, cri, docker, journald, compose");
  run->add_option("paths", flags.paths, "Files or globs (`**` allowed)");
  commands->run = run;

  CLI::App* config_cmd = app.add_subcommand("config", "Check a daemon config");
  config_cmd->require_subcommand(1);
  CLI::App* check = config_cmd->add_subcommand("check", "Exit 2 with file:line: key: reason");
  check->add_option("file", commands->check_path, "Config file (YAML)")->required();
  commands->config_check = check;
}

int DispatchRunCommands(const RunCommands& commands) {
  if (commands.config_check != nullptr && *commands.config_check) {
    return RunConfigCheck(commands.check_path);
  }
  if (commands.run != nullptr && *commands.run) {
    bool has_flags = !commands.flags.paths.empty() || !commands.flags.labels.empty() ||
                     !commands.flags.checkpoint_dir.empty() ||
                     !commands.flags.deployment_from.empty();
    if (!commands.config_path.empty() && has_flags) {
      std::cerr << "fingerprintd run: --config and PATH-OR-GLOB/flags are exclusive\n";
      return kExitUsage;
    }
    if (commands.config_path.empty() && commands.flags.paths.empty()) {
      std::cerr << "fingerprintd run: give --config FILE or at least one PATH-OR-GLOB\n";
      return kExitUsage;
    }
    return RunDaemon(commands);
  }
  return -1;
}

}  // namespace fingerprintd::daemon
