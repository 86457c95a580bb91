// FileSource: one `type: file` source of the daemon: a Tailer over its
// globs feeding the Pipeline, woken by inotify through a
// posix::stream_descriptor, polled as a fallback (run.cc drives the timers).
//
// With `release_read_bytes: true` it also keeps the files it tails bounded on
// disk (source/release_policy.h): before each checkpoint is taken,
// PrepareCheckpoint() allows each stream's release up to its target (the
// checkpoint records it); once the checkpoint is committed,
// CheckpointCommitted() punches those blocks out. When a stream has read half
// its bound past the last release, `request_checkpoint` asks the daemon for a
// checkpoint now. A file that cannot be released (its file system cannot punch
// holes, it is not writable) is logged with the reason and counted once.
//
// Where each file starts is logged and counted (fingerprintd_files_opened_total
// {start}); a file seen for the first time asks for a checkpoint at once, so
// a `kill -9` right after cannot leave it out. What cannot be read (a glob
// matching nothing, a directory missing or unreadable, a file that cannot be
// opened or read) is logged once with the path and the reason, named by
// Problems() (the daemon's /readyz) until resolved, and retried at every
// rescan; every attempt that fails is counted
// (fingerprintd_source_errors_total{reason}), so its rate stays above 0
// while the problem lasts. Bytes that
// could not be read (truncated or deleted before they were) are logged and
// counted in fingerprintd_lines_dropped_total{reason}. Each open file's read
// lag (Tailer::Lags()) is measured when the daemon asks, at a scrape.
//
// Threading: the daemon's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/wall_clock.h"
#include "config/config.h"
#include "fingerprintd/pipeline.h"
#include "source/checkpoint_store.h"
#include "source/file_source_events.h"
#include "source/inotify_watcher.h"
#include "source/live_source.h"
#include "source/release_policy.h"
#include "source/tailer.h"

namespace re2 {
class RE2;
}

namespace fingerprintd::source {

using RestoredSources = std::map<std::string, SourceCheckpoint>;

class FileSource final : public LiveSource, public TailerClient {
 public:
  // `on_read`: after each inotify wake-up (Daemon::Wake). `request_checkpoint`:
  // a release is due (see above). `restored` and `metrics` must outlive the
  // source. `clock`: the time of an inotify wake-up and of year-less lines
  // (Tick and Rescan are given theirs); tests give a clock they step.
  FileSource(boost::asio::io_context& io, const config::SourceConfig& config,
             const config::TailerConfig& tailer_config, Pipeline& pipeline,
             FileSourceEvents& metrics, const RestoredSources& restored,
             std::function<void()> on_read, std::function<void()> request_checkpoint,
             WallClock clock = &CoarseWallNowMicros);
  ~FileSource() override;

  // LiveSource
  Status Start() override;
  void Stop() override;
  void Tick(int64_t now_us) override;
  void Rescan(int64_t now_us) override;
  void ReadRemaining(int64_t now_us) override;
  void AppendCheckpoint(const Pipeline& pipeline,
                        std::vector<SourceCheckpoint>* out) const override;
  void PrepareCheckpoint(const Pipeline& pipeline) override;
  void CheckpointCommitted() override;
  std::string_view Type() const override { return "file"; }
  size_t OpenStreams() const override { return tailer_->OpenFiles(); }
  void AppendLags(std::vector<std::pair<std::string, uint64_t>>* out) const override;
  std::vector<std::string> Problems() const override;
  void AppendStatus(std::vector<SourceStatus>* out) const override;

  // When the daemon first ran (the checkpoint's); before Start().
  void SetFirstRun(int64_t first_run_us) { tailer_->SetFirstRun(first_run_us); }
  void ReadEveryFileFromItsStart() { tailer_->ReadEveryFileFromItsStart(); }

  // True when one of this source's globs matches `stream`.
  bool Matches(const std::string& stream) const;
  // Registers `stream` with the pipeline (once); its checkpoint, if any, sets
  // where the pipeline expects it to resume.
  Pipeline::SourceId Register(const std::string& stream) { return Entry(stream).id; }

  // TailerClient
  std::optional<StreamCheckpoint> OnOpen(const std::string& stream) override;
  void OnBytes(const std::string& stream, std::string_view bytes, uint64_t offset) override;
  void OnLineEnd(const std::string& stream) override;
  void OnSwitched(const std::string& stream, bool truncated, const std::string& copy) override;
  void OnStart(const std::string& stream, StartFrom from, uint64_t skipped) override;
  void OnSourceProblem(const SourceProblem& problem, SourceHealth::Event event) override;
  void OnUnread(const std::string& stream, std::string_view reason, uint64_t bytes,
                const std::string& detail) override;
  void OnDeleted(const std::string& stream, bool read_on) override;
  // A deleted file is forgotten by the pipeline (nothing of it is kept for
  // the life of the daemon); if its path comes back, OnLine registers the
  // continuation as a fresh source.
  void OnEnded(const std::string& stream) override;

 private:
  // Without inotify (or with its watches exhausted) files are polled every
  // poll_interval and globs rescanned every rescan_interval. With inotify
  // every directory of the globs is watched, so both are only a safety net,
  // run every safety_rescan_interval: a rescan walks every directory of the
  // globs, which for 1,000 pods is most of what an idle daemon would cost.
  // A stream registered with the pipeline, and what the status page says of it.
  struct StreamEntry {
    Pipeline::SourceId id;
    int64_t last_line_us = 0;            // the wall time it last gave a line
    std::string_view state = "reading";  // a literal
  };
  StreamEntry& Entry(const std::string& stream);
  // The time of the tailer call being served (its lines are read now).
  void SetNow(int64_t now_us) { now_us_ = now_us; }

  bool Polling() const { return !watcher_ || watcher_->exhausted(); }
  // Waits for the inotify descriptor. A file written continuously (a busy
  // server logs every few milliseconds) is not read at every write: a
  // wake-up within kReadAtMostEveryUs of the last read is left for the next
  // Tick, which the daemon runs every 30 ms while lines arrive. A write after
  // a quiet spell is read at once.
  void WaitForInotify();
  void ReadWhatInotifyReported(int64_t now_us);
  static constexpr int64_t kReadAtMostEveryUs = 25'000;
  // After a read: asks for a checkpoint when a stream's release is due or a
  // stream was seen for the first time; sets the globs' gauges; reads on
  // (ReadOnSoon) while a file is behind.
  void AfterRead();
  // A file still behind after a read (Tailer::HasMoreToRead: its backlog is
  // over the per-call budget) is read on at the next turn of the loop, not at
  // the next Tick: a daemon catching up (a restart far behind, start_at
  // beginning on large logs) reads at the pipeline's speed, and the loop
  // still serves its timers, HTTP and signals between slices.
  void ReadOnSoon();
  // Reads every file (Tailer::Poll) and notes when.
  void PollNow(int64_t now_us);

  WallClock clock_;
  std::function<void()> on_read_;
  std::function<void()> request_checkpoint_;
  config::SourceConfig config_;
  config::TailerConfig tailer_config_;
  Pipeline& pipeline_;
  FileSourceEvents& metrics_;
  const RestoredSources& restored_;
  std::unique_ptr<re2::RE2> deployment_from_;
  std::unique_ptr<InotifyWatcher> watcher_;
  std::unique_ptr<Tailer> tailer_;
  boost::asio::posix::stream_descriptor descriptor_;
  std::map<std::string, StreamEntry> streams_;
  int64_t now_us_ = 0;
  // release_read_bytes: one policy per stream, and whether one is due.
  std::map<std::string, ReleasePolicy> release_;
  bool release_due_ = false;
  bool new_stream_ = false;  // a stream without a checkpoint was opened
  // Streams opened at their end (start_at): the offset they start at, which
  // their checkpoint never goes below.
  std::map<std::string, uint64_t> skipped_;
  int64_t last_poll_us_ = 0;
  int64_t last_inotify_read_us_ = 0;
  bool inotify_parked_ = false;  // a wake-up waits for Tick (WaitForInotify)
  int64_t last_rescan_us_ = 0;
  bool stopped_ = false;
  bool read_on_posted_ = false;
  // Held by the source; a ReadOnSoon handler still queued when the source is
  // gone (a reload) sees it expired and does nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace fingerprintd::source
