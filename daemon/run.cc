// `fingerprintd run`: the live daemon. One boost::asio::io_context thread owns
// everything: the file sources (file_source.h: a Tailer each, woken by inotify
// through a posix::stream_descriptor, polled as a fallback, their globs
// rescanned on a timer), the Pipeline they feed, the timer that advances it on
// wall time, the checkpoint timer and the signals. The parse/rules/correlate
// stages stay synchronous and clock-free; only daemon/ reads the clock
// (clock.h). After each committed checkpoint a file source with
// release_read_bytes releases what it no longer needs from disk, and one that
// read half its bound past its last release asks for a checkpoint at once.
//
// A source is a LiveSource (Start/Stop/AppendCheckpoint on the io_context); an
// incident consumer is a correlate::IncidentSink added to the FanoutSink (the
// JSONL log, sink::Metrics for fingerprintd_worker_failures, the IncidentStore
// behind /incidents and the status page); every counter goes through
// PipelineEvents into sink::Metrics. The HTTP server (http/) answers on the
// same io_context thread, so it reads that state without a lock.
//
// Shutdown (SIGTERM/SIGINT): read what the files hold last
// (LiveSource::ReadRemaining), stop reading, Advance once (decides what the
// wall clock allows), save the checkpoint, return from run(). Finish() is NOT
// called: it would close every open incident, and a restart must resume them
// with their ids. SIGHUP: the config and the rules are loaded again; if either
// fails the old ones keep running (logged, counted); if both load, the pipeline
// is rebuilt from an in-memory checkpoint (the same path as a restart), so the
// new rules see exactly the state the old ones left. A new generation that fails
// to start (a source's address taken) is stopped and the old config starts
// again from the same checkpoint (logged, counted).
//
// `--audit FILE` (hidden, for bench/soak.sh): every line read is recorded in
// an AuditLog (sink/audit_log.h) and written to FILE with the checkpoint that commits
// it, so a soak that SIGKILLs the daemon can count lines lost and doubled.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "common/secret_file.h"
#include "common/wall_clock.h"
#include "config/config.h"
#include "daemon.h"
#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline.h"
#include "fingerprintd/rules.h"
#include "http/api.h"
#include "http/http_server.h"
#include "sd_notify.h"
#include "sink/alertmanager.h"
#include "sink/audit_log.h"
#include "sink/fanout_sink.h"
#include "sink/incident_store.h"
#include "sink/jsonl_sink.h"
#include "sink/metrics.h"
#include "sink/redacting_log_sink.h"
#include "sink/redaction.h"
#include "source/checkpoint_store.h"
#include "source/file_source.h"
#include "source/live_source.h"
#include "source/socket_source.h"
#include "source/tailer.h"

namespace fingerprintd::daemon {

using sink::AuditLog;
using sink::FanoutSink;
using source::FileSource;
using source::LiveSource;
using source::MakeSocketSource;
using source::RestoredSources;
using source::SocketParserOptions;
using source::SocketSourceContext;
using source::SocketSourceName;

namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

// The wall-clock timer advances the pipeline every kAdvanceEvery while lines
// were read within kBusyFor, and every kIdleAdvanceEvery after that; the
// first read after a silent spell re-arms it at kAdvanceEvery (Wake). A
// failure's last line is decided within two busy ticks: the first sees the
// line arrive, the second sees wall time move past it (a traceback waits that
// long for a continuation line), so an incident reaches /metrics within about
// 2 x 30 ms of the write (bench/sidecar.sh latency). 1,000 silent files cost a
// pass over their state every 2 s. What waits on the idle cadence is only
// ever late by it: a window closing, a partial line's timeout, an event held
// for a silent source.
constexpr auto kAdvanceEvery = milliseconds(30);
constexpr int64_t kBusyForUs = 10'000'000;
constexpr auto kIdleAdvanceEvery = milliseconds(2000);

milliseconds Millis(int64_t us) { return milliseconds(std::max<int64_t>(1, us / 1000)); }

// One generation of the pipeline and the sources feeding it: a SIGHUP that
// loads replaces it whole.
struct Generation {
  std::unique_ptr<Pipeline> pipeline;
  RestoredSources restored;
  std::vector<std::unique_ptr<LiveSource>> sources;
};

class Daemon {
 public:
  Daemon(config::DaemonConfig config, std::shared_ptr<const rules::RuleSet> rules,
         const config::SourceTypes& source_types, std::string audit_path)
      : config_(std::move(config)),
        source_types_(source_types),
        audit_path_(std::move(audit_path)),
        rules_(std::move(rules)),
        signals_(io_, SIGINT, SIGTERM, SIGHUP),
        advance_timer_(io_),
        rescan_timer_(io_),
        checkpoint_timer_(io_),
        incident_log_timer_(io_) {}

  int Run() {
    // A file-size limit (ulimit -f) reached while writing the incident log or
    // a checkpoint is a write error (EFBIG), counted and retried like a full
    // disk, not the end of the daemon.
    std::signal(SIGXFSZ, SIG_IGN);
    if (Status s = UseRedaction(config_); !s.ok()) {
      spdlog::error("{}", s.message());
      return kExitUsage;
    }
    auto jsonl = sink::JsonlIncidentSink::Open(config_.incidents_path);
    if (!jsonl.ok()) {
      spdlog::error("incidents: {}", jsonl.status().message());
      return kExitUsage;
    }
    jsonl_ = std::move(*jsonl);
    if (jsonl_->torn_bytes_cut() > 0) {
      spdlog::warn(
          "incidents: {}: its last record was cut short (a crash or a full disk); its {} "
          "byte(s) removed, so the next record starts on a line of its own",
          config_.incidents_path, jsonl_->torn_bytes_cut());
    }
    fanout_.Add(jsonl_.get(), /*mirrors_open=*/false);
    fanout_.Add(&metrics_);
    fanout_.Add(&incidents_);
    metrics_.SetRulesLoaded(rules_->rules().size());
    if (Status s = LoadHttpToken(config_); !s.ok()) {
      spdlog::error("{}", s.message());
      return kExitUsage;
    }
    if (Status s = StartHttp(); !s.ok()) {
      spdlog::error("{}", s.message());
      return kExitUsage;
    }
    // Alertmanager push (optional, sink/alertmanager.h): lives until Run()
    // returns, so it stops with the io_context; a url change needs a restart.
    // Made once HTTP is bound: its alerts' generatorURL names that address.
    std::unique_ptr<sink::AlertmanagerSink> alertmanager;
    if (!config_.alertmanager.url.empty()) {
      sink::AlertmanagerOptions options;
      options.url = config_.alertmanager.url;
      options.tls = config_.alertmanager.tls;
      options.auth = config_.alertmanager.auth;
      options.now_us = &WallNowMicros;
      options.labels = config_.alertmanager.labels;
      options.resend_interval_us = config_.alertmanager.resend_interval_us;
      options.timeout_us = config_.alertmanager.timeout_us;
      options.queue_size = config_.alertmanager.queue_size;
      options.generator_url_base = config_.alertmanager.generator_url_base;
      if (options.generator_url_base.empty()) {
        char host[256] = {};
        if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
        options.generator_url_base = sink::DefaultGeneratorUrlBase(http_->local_address(), host);
      }
      options.log = [](std::string_view line) { spdlog::warn("{}", line); };
      auto created = sink::AlertmanagerSink::Create(io_, std::move(options), metrics_);
      if (!created.ok()) {
        spdlog::error("alertmanager: {}", created.status().message());
        return kExitUsage;
      }
      alertmanager = std::move(*created);
      fanout_.Add(alertmanager.get());
      alertmanager->Start();
      spdlog::info("alertmanager: pushing incidents to {}", config_.alertmanager.url);
    }
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
        if (checkpoint->first_run_us > 0) first_run_us_ = checkpoint->first_run_us;
      } else if (loaded.status().code() != StatusCode::kNotFound) {
        CheckpointCorrupt(loaded.status().message());
      }
    } else {
      spdlog::warn("no checkpoint_dir: a restart starts from start_at and forgets open incidents");
    }
    if (!audit_path_.empty()) {
      if (!store_) {
        spdlog::error("--audit needs a checkpoint_dir: it is written with the checkpoints");
        return kExitUsage;
      }
      // The file holds the lines of the checkpoint being resumed: what a crash
      // wrote after it is read again, so it is cut off (sink/audit_log.h).
      uint64_t committed = checkpoint && checkpoint->audit_bytes > 0 ? checkpoint->audit_bytes : 0;
      auto audit = AuditLog::Open(audit_path_, committed);
      if (!audit.ok()) {
        spdlog::error("{}", audit.status().message());
        return kExitUsage;
      }
      audit_ = std::move(*audit);
      spdlog::info("audit: committed lines to {} (from byte {})", audit_path_, committed);
    }
    if (Status s = StartGeneration(checkpoint ? &*checkpoint : nullptr); !s.ok()) {
      spdlog::error("{}", s.message());
      return kExitUsage;
    }
    read_from_start_ = false;  // a reload resumes from its own snapshot
    serving_ = true;
    ReportSources();  // ready unless a source cannot be read
    WaitForSignal();
    ScheduleAdvance();
    ScheduleRescan();
    ScheduleCheckpoint();
    ScheduleIncidentLogRetry();
    spdlog::info("fingerprintd {} running: {} rule(s), incidents to {}", FINGERPRINTD_VERSION,
                 rules_->rules().size(),
                 config_.incidents_path == "-" ? "stdout" : config_.incidents_path);
    if (Status s = SdNotify("READY=1"); !s.ok()) spdlog::warn("{}", s.message());
    RunLoop();
    // SIGTERM: what Alertmanager has not received yet (a close above all) is
    // sent before the exit, for at most the push timeout.
    if (alertmanager) {
      io_.restart();
      alertmanager->Flush([this](size_t left) {
        if (left > 0) spdlog::warn("alertmanager: {} alert(s) not delivered before exit", left);
        io_.stop();
      });
      RunLoop();
    }
    spdlog::info(
        "stopped: {} lines, {} bytes, {} rotation(s), {} truncation(s), {} dropped, {} line(s) "
        "read again",
        metrics_.lines(), metrics_.bytes(), metrics_.rotations(), metrics_.truncations(),
        metrics_.dropped(), metrics_.lines_reread());
    return kExitOk;
  }

 private:
  // A checkpoint that does not decode or restore: moved aside for inspection,
  // counted, and told in one line that never quotes it; the files are then
  // read from their beginning (those within ignore_older), since where each
  // stopped is not known: what was written while the daemon was down is read,
  // not skipped as start_at: end would.
  void CheckpointCorrupt(const std::string& why) {
    metrics_.CheckpointFailed();
    metrics_.CheckpointCorrupt();
    read_from_start_ = true;
    StatusOr<std::string> aside = store_->MoveAside(WallNowMicros());
    spdlog::warn(
        "corrupt checkpoint: {}; {}; open incidents are forgotten and tailed files are read from "
        "their beginning (ignore_older still applies)",
        why,
        aside.ok() ? "moved aside to " + *aside
                   : "could not move it aside: " + std::string(aside.status().message()));
  }

  // http.auth_token_file: the bearer token of the HTTP API (none without it).
  // Read at start and at each reload, so a rotated Secret is taken up by a
  // SIGHUP.
  Status LoadHttpToken(const config::DaemonConfig& config) {
    if (config.http_auth_token_file.empty()) {
      api_.SetBearerToken("", false);
      return OkStatus();
    }
    auto token =
        ReadSecretFile("http.auth_token_file", config.http_auth_token_file, SecretShape::kToken);
    if (!token.ok()) return token.status();
    api_.SetBearerToken(std::move(*token), config.http_metrics_auth);
    return OkStatus();
  }

  // The config's redaction patterns, for every incident output and the log.
  Status UseRedaction(const config::DaemonConfig& config) {
    auto redactor = Redactor::Create(config.redaction.All());
    if (!redactor.ok()) return redactor.status();
    fanout_.SetRedactor(*redactor);
    if (sink::LogSink()) sink::LogSink()->SetRedactor(*redactor);
    return OkStatus();
  }

  // Runs the event loop until it stops. An exception a handler lets out is a
  // bug, but never what ends the daemon: it is logged, counted
  // (fingerprintd_internal_errors_total) and dropped, and the loop runs on.
  void RunLoop() {
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        metrics_.InternalError();
        spdlog::error("internal error in an event handler, dropped: {}", e.what());
      }
    }
  }

  // Binds the HTTP server first, so /healthz answers (and /readyz says
  // "starting") while the sources are opened.
  Status StartHttp() {
    http::ServerOptions options;
    options.listen = config_.http_listen;
    options.on_descriptors_exhausted = [this] {
      metrics_.AcceptFailed("descriptors");
      const auto now = std::chrono::steady_clock::now();
      if (now - http_exhaustion_logged_ > std::chrono::seconds(60)) {
        spdlog::error(
            "http: out of file descriptors; probes are answered from a reserve, other "
            "connections wait (raise the limit: LimitNOFILE, ulimit -n)");
        http_exhaustion_logged_ = now;
      }
    };
    http_ = std::make_unique<http::HttpServer>(io_, options, [this](const http::Request& request) {
      if (request.path == "/readyz" || request.path == "/metrics") {
        ReportSources(request.path == "/metrics");
      }
      if (request.path == "/" && generation_) {
        std::vector<source::SourceStatus> rows;
        for (const auto& source : generation_->sources) source->AppendStatus(&rows);
        api_.SetSources(std::move(rows));
      }
      return api_.Handle(request, WallNowMicros());
    });
    if (Status s = http_->Start(); !s.ok()) return s;
    api_.SetServerStats(&http_->stats());
    api_.SetReady(false, "opening sources");
    spdlog::info("http: listening on {}", http_->local_address());
    return OkStatus();
  }

  Status StartGeneration(const source::Checkpoint* checkpoint) {
    generation_ = std::make_unique<Generation>();
    Pipeline::Options pipeline_options = config::PipelineOptionsFor(config_);
    if (audit_) pipeline_options.line_observer = audit_->LineObserver();
    generation_->pipeline = std::make_unique<Pipeline>(rules_, pipeline_options, metrics_, fanout_);
    std::vector<FileSource*> files;
    for (const config::SourceConfig& source : config_.sources) {
      if (source.type != config::SourceType::kFile) {  // tcp, unix, stdin: socket_source.h
        SocketSourceContext context{io_, *generation_->pipeline, metrics_, [this] { Wake(); },
                                    [this] { EndOfInput(); }};
        context.on_accept_failed = [this](std::string_view reason) {
          metrics_.AcceptFailed(reason);
        };
        generation_->sources.push_back(MakeSocketSource(source, std::move(context)));
        continue;
      }
      auto file = std::make_unique<FileSource>(
          io_, source, config_.tailer, *generation_->pipeline, metrics_, generation_->restored,
          [this] { Wake(); }, [this] { RequestCheckpoint(); });
      file->SetFirstRun(first_run_us_);
      if (read_from_start_) file->ReadEveryFileFromItsStart();
      files.push_back(file.get());
      generation_->sources.push_back(std::move(file));
    }
    if (checkpoint) {
      // The checkpoint's files are registered by their sources before the
      // state is restored (their parser options, start and release policy);
      // the socket streams it names get theirs from CompleteRestoredSpec.
      for (const auto& source : checkpoint->sources) generation_->restored[source.name] = source;
      for (const auto& source : checkpoint->sources) {
        for (FileSource* file : files) {
          if (file->Matches(source.name)) {
            file->Register(source.name);
            break;
          }
        }
      }
      if (Status s = generation_->pipeline->RestoreState(
              checkpoint->pipeline_state, [this](SourceSpec* spec) { CompleteRestoredSpec(spec); });
          !s.ok()) {
        metrics_.TakeRestoreRereads();  // not restored: nothing is read again from there
        if (!serving_ && store_) {      // the checkpoint read at start
          CheckpointCorrupt(store_->path() +
                            ": its state did not restore: " + std::string(s.message()));
        } else {  // a reload's own snapshot
          metrics_.CheckpointFailed();
          spdlog::warn("state not restored ({}); starting from start_at", s.message());
        }
        return StartGeneration(nullptr);
      }
      fanout_.ReportRestored(*generation_->pipeline);
      LogRestoreRereads();
    }
    for (auto& source : generation_->sources) {
      if (Status s = source->Start(); !s.ok()) return s;
    }
    return OkStatus();
  }

  // What the restore left to read again (Pipeline::RestoreState reports it
  // through PipelineEvents::RereadAtRestore, counted in
  // fingerprintd_restart_reread_bytes_total): a line per source, and the total.
  void LogRestoreRereads() {
    uint64_t total = 0;
    const std::vector<std::pair<std::string, uint64_t>> rereads = metrics_.TakeRestoreRereads();
    for (const auto& [source, bytes] : rereads) {
      spdlog::info("restore: {} reads {} bytes again", source, bytes);
      total += bytes;
    }
    spdlog::info("restore: {} bytes of {} source(s) read again", total, rereads.size());
  }

  // The saved state names socket streams, which never resume; a client that
  // reconnects at once gets its old stream's name (the connection's slot)
  // before the pipeline has forgotten the ended one, so its lines go to that
  // source. Such a stream gets its socket source's parser options here, not
  // the pipeline's defaults, which have no clock: a vLLM header without a
  // year was dated 1970 and made a second incident (found by bench/soak.sh).
  void CompleteRestoredSpec(SourceSpec* spec) const {
    for (const config::SourceConfig& source : config_.sources) {
      if (source.type == config::SourceType::kFile ||
          !spec->name.starts_with(SocketSourceName(source) + "#")) {
        continue;
      }
      spec->parser = SocketParserOptions(source);
      spec->parser.now_us = WallNowMicros();
      spec->parser.current_year = CurrentYear();
      return;
    }
  }

  source::Checkpoint Snapshot() const {
    source::Checkpoint checkpoint;
    for (const auto& source : generation_->sources) {
      source->AppendCheckpoint(*generation_->pipeline, &checkpoint.sources);
    }
    checkpoint.pipeline_state = generation_->pipeline->SaveState();
    checkpoint.first_run_us = first_run_us_;
    return checkpoint;
  }

  // Lines (read again after a restore included), rotations and truncations
  // seen so far: when this has not moved and no incident was written, the
  // state is the last checkpoint's (an older checkpoint stays a valid place to
  // resume from), so it is not rebuilt.
  uint64_t Activity() const {
    return metrics_.lines() + metrics_.lines_reread() + metrics_.rotations() +
           metrics_.truncations();
  }

  void SaveCheckpoint(bool force = false) {
    uint64_t activity = Activity();
    if (!force && !fanout_.changed && activity == activity_at_checkpoint_) return;
    // Records the incident log could not take yet: a checkpoint past their
    // lines would lose them at a restart; without it, they are decided again.
    if (jsonl_->pending() > 0) return;
    activity_at_checkpoint_ = activity;
    fanout_.changed = false;
    if (!store_) return;
    // release_read_bytes: what each file source may release is decided
    // first, so the checkpoint records it; released once it is committed.
    for (const auto& source : generation_->sources)
      source->PrepareCheckpoint(*generation_->pipeline);
    source::Checkpoint checkpoint;
    try {
      checkpoint = Snapshot();
    } catch (const std::exception& e) {  // never the end of the daemon: the last one stays
      metrics_.CheckpointFailed();
      spdlog::error("checkpoint not saved: {}", e.what());
      return;
    }
    if (audit_) {
      auto bytes = audit_->Prepare(checkpoint);
      if (!bytes.ok()) {
        metrics_.CheckpointFailed();
        spdlog::error("checkpoint not saved: {}", bytes.status().message());
        return;
      }
      checkpoint.audit_bytes = static_cast<int64_t>(*bytes);
    }
    if (Status s = store_->Save(checkpoint); !s.ok()) {
      if (audit_) audit_->Abort();
      metrics_.CheckpointFailed();
      spdlog::error("checkpoint: {}", s.message());
      return;
    }
    if (audit_) audit_->Confirm();
    metrics_.CheckpointSaved(WallNowMicros());
    for (const auto& source : generation_->sources) source->CheckpointCommitted();
  }

  // A file source read half its max_retained_bytes past its last release:
  // a checkpoint (and the release after it) at the next turn of the loop,
  // outside the source's own callback.
  void RequestCheckpoint() {
    if (checkpoint_requested_ || stopping_) return;
    checkpoint_requested_ = true;
    asio::post(io_, [this] {
      checkpoint_requested_ = false;
      if (!stopping_) SaveCheckpoint(/*force=*/true);
    });
  }

  // Arms the advance timer; a handler of an earlier arming (cancelled, or
  // already queued when Wake re-armed) sees a stale generation and returns.
  void ScheduleAdvance(milliseconds after = kAdvanceEvery) {
    idle_cadence_ = after != kAdvanceEvery;
    advance_timer_.expires_after(after);
    advance_timer_.async_wait(
        [this, generation = ++advance_generation_](const boost::system::error_code& ec) {
          if (ec || stopping_ || generation != advance_generation_) return;
          int64_t now = WallNowMicros();
          if (uint64_t activity = Activity(); activity != activity_at_tick_) {
            activity_at_tick_ = activity;
            last_activity_us_ = now;
          }
          for (auto& source : generation_->sources) source->Tick(now);
          generation_->pipeline->Advance(now);
          incidents_.Prune(now);
          if (fanout_.changed) SaveCheckpoint();  // an incident was written: commit its lines
          ScheduleAdvance(now - last_activity_us_ < kBusyForUs ? kAdvanceEvery : kIdleAdvanceEvery);
        });
  }

  // Open streams by type, /readyz (not ready while a source cannot be read)
  // and, for a scrape of /metrics (`with_lags`), each tailed file's read lag
  // measured now: a stat per file, not paid on every rescan of an idle node.
  void ReportSources(bool with_lags = false) {
    if (!serving_ || !generation_) return;
    std::map<std::string_view, size_t> open;
    std::vector<std::pair<std::string, uint64_t>> lags;
    std::string problems;
    for (auto& source : generation_->sources) {
      open[source->Type()] += source->OpenStreams();
      if (with_lags) source->AppendLags(&lags);
      for (const std::string& problem : source->Problems()) {
        problems += (problems.empty() ? "" : "; ") + problem;
      }
    }
    for (const std::string& problem : DaemonProblems()) {
      problems += (problems.empty() ? "" : "; ") + problem;
    }
    for (const auto& [type, count] : open) metrics_.SetSourcesOpen(type, count);
    if (with_lags) metrics_.SetSourceLags(lags);
    metrics_.SetIncidentLog(jsonl_->write_errors(), jsonl_->pending());
    api_.SetReady(problems.empty(), problems);
  }

  // What keeps the daemon itself from doing its job, for /readyz: incident
  // records it cannot write, and descriptors run out (in the last 10 s).
  std::vector<std::string> DaemonProblems() const {
    std::vector<std::string> out;
    if (jsonl_->pending() > 0) {
      out.push_back("incident log " + config_.incidents_path + ": cannot write (" +
                    jsonl_->error() + "), " + std::to_string(jsonl_->pending()) +
                    " record(s) waiting");
    }
    const http::ServerStats& http = http_->stats();
    if (http.descriptors_exhausted > 0 &&
        std::chrono::steady_clock::now() - http.last_exhausted < std::chrono::seconds(10)) {
      out.push_back("out of file descriptors: connections are refused (" +
                    std::to_string(http.descriptors_exhausted) + " so far)");
    }
    return out;
  }

  // A source read something: on the idle cadence, advance at the next tick.
  void Wake() {
    if (idle_cadence_ && !stopping_ && Activity() != activity_at_tick_) ScheduleAdvance();
  }

  void ScheduleRescan() {
    rescan_timer_.expires_after(Millis(config_.tailer.rescan_interval_us));
    rescan_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping_) return;
      int64_t now = WallNowMicros();
      for (auto& source : generation_->sources) source->Rescan(now);
      ReportSources();
      ScheduleRescan();
    });
  }

  // The incident log's records kept after a failed write (a full disk) are
  // written again every second; the failure and the recovery are logged once.
  void ScheduleIncidentLogRetry() {
    incident_log_timer_.expires_after(std::chrono::seconds(1));
    incident_log_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping_) return;
      ServiceIncidentLog();
      ScheduleIncidentLogRetry();
    });
  }

  void ServiceIncidentLog() {
    jsonl_->Retry();
    const bool failing = jsonl_->pending() > 0;
    if (failing && !incident_log_failing_) {
      spdlog::error(
          "incidents: cannot write to {} ({}); {} record(s) kept and retried every "
          "second; not ready, no checkpoint past them",
          config_.incidents_path, jsonl_->error(), jsonl_->pending());
    } else if (!failing && incident_log_failing_) {
      spdlog::info("incidents: {} written again; the kept records are in it",
                   config_.incidents_path);
    }
    incident_log_failing_ = failing;
    if (jsonl_->dropped_records() > incident_records_dropped_) {
      spdlog::error("incidents: {} record(s) dropped: more than {} waited to be written",
                    jsonl_->dropped_records() - incident_records_dropped_,
                    sink::JsonlIncidentSink::kMaxPending);
      incident_records_dropped_ = jsonl_->dropped_records();
    }
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

  // stdin reached its end. As its only source, the daemon has read its whole
  // input: every incident is decided and closed (as replay does), then it stops.
  void EndOfInput() {
    if (config_.sources.size() != 1 || stopping_) {
      spdlog::info("stdin: end of input");
      return;
    }
    spdlog::info("stdin: end of input; deciding what is pending and stopping");
    generation_->pipeline->Finish();
    Shutdown();
  }

  void Shutdown() {
    if (Status s = SdNotify("STOPPING=1"); !s.ok()) spdlog::warn("{}", s.message());
    stopping_ = true;
    http_->Stop();
    const int64_t now = WallNowMicros();
    for (auto& source : generation_->sources) source->ReadRemaining(now);
    for (auto& source : generation_->sources) source->Stop();
    generation_->pipeline->Advance(WallNowMicros());
    SaveCheckpoint(/*force=*/true);
    boost::system::error_code ec;
    advance_timer_.cancel();
    rescan_timer_.cancel();
    checkpoint_timer_.cancel();
    incident_log_timer_.cancel();
    signals_.cancel(ec);
    io_.stop();
  }

  void Reload() {
    spdlog::info("SIGHUP: reloading config and rules");
    config::DaemonConfig next = config_;
    if (!config_.file.empty()) {
      auto loaded = config::LoadConfigFile(config_.file, source_types_);
      if (!loaded.ok()) {
        metrics_.RuleReloadFailed();
        spdlog::error("reload: {}; keeping the running config and rules",
                      loaded.status().message());
        return;
      }
      next = std::move(*loaded);
      config::ApplyLabels(config_.command_line_labels, &next);
      if (next.checkpoint_dir != config_.checkpoint_dir ||
          next.incidents_path != config_.incidents_path ||
          next.http_listen != config_.http_listen) {
        spdlog::warn(
            "reload: checkpoint_dir, incidents.path and http.listen changes need a restart; kept");
        next.checkpoint_dir = config_.checkpoint_dir;
        next.incidents_path = config_.incidents_path;
        next.http_listen = config_.http_listen;
      }
    }
    auto rules = next.rules_dir.empty() ? rules::LoadEmbeddedRules(rules::EmbeddedTests::kSkip)
                                        : rules::LoadRuleDir(next.rules_dir);
    if (!rules.ok()) {
      metrics_.RuleReloadFailed();
      spdlog::error("reload: rules: {}; keeping the running rules", rules.status().message());
      return;
    }
    // The old generation stops before the new one starts: a socket source of
    // both binds the same address. A new one that fails to start (an address
    // taken, a socket path not creatable) is stopped and the old config and
    // rules start again from the same snapshot, so the daemon never runs
    // half of a config.
    source::Checkpoint snapshot = Snapshot();
    RetireGeneration(snapshot);
    config::DaemonConfig previous = std::exchange(config_, std::move(next));
    std::shared_ptr<const rules::RuleSet> previous_rules = std::exchange(rules_, std::move(*rules));
    incidents_.SetLimits(config_.http_history_max_closed, config_.http_history_max_age_us);
    if (Status s = StartGeneration(&snapshot); !s.ok()) {
      metrics_.RuleReloadFailed();
      spdlog::error("reload: {}; going on with the running config and rules", s.message());
      RetireGeneration(snapshot);
      config_ = std::move(previous);
      rules_ = std::move(previous_rules);
      incidents_.SetLimits(config_.http_history_max_closed, config_.http_history_max_age_us);
      if (Status again = StartGeneration(&snapshot); !again.ok()) {
        spdlog::error("reload: the running config did not start again either: {}", again.message());
      }
      return;
    }
    metrics_.SetRulesLoaded(rules_->rules().size());
    if (Status s = UseRedaction(config_); !s.ok()) spdlog::error("reload: {}", s.message());
    if (Status s = LoadHttpToken(config_); !s.ok()) {
      spdlog::error("reload: {}; the previous token stays", s.message());
    }
    spdlog::info("reloaded: {} rule(s)", rules_->rules().size());
  }

  // Stops the generation's sources and keeps it until the callbacks already
  // queued for them have run (they check their stopped flag); the lines its
  // sources read after `snapshot` are read again by the next generation.
  void RetireGeneration(const source::Checkpoint& snapshot) {
    if (audit_) audit_->Rewind(snapshot);
    for (auto& source : generation_->sources) source->Stop();
    retired_.push_back(std::move(generation_));
    asio::post(io_, [this] { retired_.clear(); });
  }

  config::DaemonConfig config_;
  const config::SourceTypes& source_types_;  // SIGHUP reads `sources:` with them
  std::string audit_path_;
  std::shared_ptr<const rules::RuleSet> rules_;
  asio::io_context io_;
  asio::signal_set signals_;
  asio::steady_timer advance_timer_;
  asio::steady_timer rescan_timer_;
  asio::steady_timer checkpoint_timer_;
  asio::steady_timer incident_log_timer_;
  bool incident_log_failing_ = false;  // logged once per change (ServiceIncidentLog)
  uint64_t incident_records_dropped_ = 0;
  std::chrono::steady_clock::time_point http_exhaustion_logged_{};
  sink::Metrics metrics_{FINGERPRINTD_VERSION};
  sink::IncidentStore incidents_{metrics_, config_.http_history_max_closed,
                                 config_.http_history_max_age_us};
  http::Api api_{metrics_, incidents_, FINGERPRINTD_VERSION};
  std::unique_ptr<http::HttpServer> http_;
  FanoutSink fanout_{metrics_};
  bool read_from_start_ = false;  // the checkpoint was corrupt (CheckpointCorrupt)
  std::unique_ptr<sink::JsonlIncidentSink> jsonl_;
  std::unique_ptr<source::CheckpointStore> store_;
  std::unique_ptr<AuditLog> audit_;  // --audit
  std::unique_ptr<Generation> generation_;
  std::vector<std::unique_ptr<Generation>> retired_;
  uint64_t activity_at_checkpoint_ = UINT64_MAX;
  uint64_t activity_at_tick_ = UINT64_MAX;
  int64_t last_activity_us_ = 0;
  uint64_t advance_generation_ = 0;
  bool idle_cadence_ = false;
  bool stopping_ = false;
  bool checkpoint_requested_ = false;
  bool serving_ = false;  // started: ReportSources() decides /readyz
  // When the daemon first ran with this checkpoint directory (the
  // checkpoint's, else this start): files born after it and missing from the
  // checkpoint were created while it was stopped (source/tailer.h).
  int64_t first_run_us_ = WallNowMicros();
};

}  // namespace

int RunDaemonWith(config::DaemonConfig config, std::shared_ptr<const rules::RuleSet> rules,
                  const config::SourceTypes& source_types, std::string audit_path) {
  Daemon daemon(std::move(config), std::move(rules), source_types, std::move(audit_path));
  return daemon.Run();
}

}  // namespace fingerprintd::daemon
