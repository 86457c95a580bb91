// FileSource: see file_source.h.
#include "source/file_source.h"

#include <re2/re2.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <filesystem>

#include "common/wall_clock.h"
#include "source/glob.h"

namespace fingerprintd::source {

namespace asio = boost::asio;

FileSource::FileSource(asio::io_context& io, const config::SourceConfig& config,
                       const config::TailerConfig& tailer_config, Pipeline& pipeline,
                       FileSourceEvents& metrics, const RestoredSources& restored,
                       std::function<void()> on_read, std::function<void()> request_checkpoint,
                       WallClock clock)
    : clock_(clock),
      on_read_(std::move(on_read)),
      request_checkpoint_(std::move(request_checkpoint)),
      config_(config),
      tailer_config_(tailer_config),
      pipeline_(pipeline),
      metrics_(metrics),
      restored_(restored),
      descriptor_(io) {
  if (!config.deployment_from.empty())
    deployment_from_ = config::CompileDeploymentFrom(config.deployment_from);
  TailerOptions options;
  options.paths = config.paths;
  options.exclude = config.exclude;
  options.ignore_older_us = config.ignore_older_us;
  options.start_at_end = config.start_at == config::StartAt::kEnd;
  options.max_files = tailer_config.max_files;
  tailer_ = std::make_unique<Tailer>(options, metrics, *this);
}

FileSource::~FileSource() = default;

Status FileSource::Start() {
  if (tailer_config_.inotify) {
    auto watcher = InotifyWatcher::Create();
    if (watcher.ok()) {
      watcher_ = std::move(*watcher);
      tailer_->SetWatcher(watcher_.get());
      descriptor_.assign(::dup(watcher_->fd()));
    } else {
      spdlog::warn("inotify unavailable ({}); polling every {} ms", watcher.status().message(),
                   tailer_config_.poll_interval_us / 1000);
    }
  }
  int64_t now = clock_();
  SetNow(now);
  tailer_->Rescan(now);
  last_rescan_us_ = last_poll_us_ = now;
  spdlog::info("file source {}: {} file(s) at start", config_.paths.front(),
               tailer_->Streams().size());
  if (config_.release_read_bytes) {
    spdlog::info(
        "file source {}: releasing the disk blocks of what was read and checkpointed; each "
        "file kept under {} bytes on disk while the daemon keeps up",
        config_.paths.front(), config_.max_retained_bytes);
  }
  AfterRead();
  WaitForInotify();
  return OkStatus();
}

void FileSource::Stop() {
  stopped_ = true;
  boost::system::error_code ec;
  descriptor_.cancel(ec);
  descriptor_.close(ec);
}

void FileSource::Tick(int64_t now_us) {
  SetNow(now_us);
  if (inotify_parked_ && !stopped_) {  // a busy file's wake-up, left for this tick
    inotify_parked_ = false;
    ReadWhatInotifyReported(now_us);
    WaitForInotify();
  }
  int64_t poll_every =
      Polling() ? tailer_config_.poll_interval_us : tailer_config_.safety_rescan_interval_us;
  // A deleted file still written may wake no watch: polled as without inotify.
  if (tailer_->Draining()) poll_every = std::min(poll_every, tailer_config_.poll_interval_us);
  if (tailer_->HasMoreToRead() || now_us - last_poll_us_ >= poll_every) {
    PollNow(now_us);
  }
  AfterRead();
}

void FileSource::Rescan(int64_t now_us) {
  if (!Polling() && now_us - last_rescan_us_ < tailer_config_.safety_rescan_interval_us) return;
  SetNow(now_us);
  tailer_->Rescan(now_us);
  last_rescan_us_ = now_us;
  AfterRead();
}

void FileSource::ReadRemaining(int64_t now_us) {
  if (stopped_ || tailer_->HasMoreToRead()) return;
  SetNow(now_us);
  PollNow(now_us);  // one pass: each file up to max_read_per_call
}

void FileSource::PollNow(int64_t now_us) {
  tailer_->Poll(now_us);
  last_poll_us_ = now_us;
}

void FileSource::AppendCheckpoint(const Pipeline& pipeline,
                                  std::vector<SourceCheckpoint>* out) const {
  for (const auto& [stream, entry] : streams_) {
    SourceCheckpoint& cp = out->emplace_back();
    cp.name = stream;
    cp.safe = pipeline.SafePosition(entry.id);
    // Opened at its end (start_at) and nothing read since: the pipeline has
    // no line to say so, and a restart must not read what was skipped.
    if (auto it = skipped_.find(stream); it != skipped_.end() && cp.safe.offset < it->second) {
      cp.safe.offset = it->second;
    }
    cp.pieces = tailer_->PiecesFor(stream, cp.safe.offset);
    cp.read = tailer_->NextOffset(stream);
  }
}

void FileSource::PrepareCheckpoint(const Pipeline& pipeline) {
  if (!config_.release_read_bytes) return;
  for (const auto& [stream, entry] : streams_) {
    auto it = release_.find(stream);
    if (it == release_.end()) {
      it = release_.emplace(stream, ReleasePolicy(config_.max_retained_bytes)).first;
    }
    ReleasePolicy& policy = it->second;
    bool forced = false;
    const uint64_t target = policy.Target(pipeline.SafePosition(entry.id).offset,
                                          pipeline.NextPosition(entry.id).offset, &forced);
    const uint64_t before = policy.allowed();
    policy.Allowed(tailer_->AllowRelease(stream, target));
    if (forced && policy.allowed() > before) {
      metrics_.RetainedBytesEvicted();
      spdlog::warn(
          "{}: the pipeline holds lines more than max_retained_bytes/4 back; releasing up to "
          "byte {} anyway (a restart resumes there)",
          stream, policy.allowed());
    }
  }
}

void FileSource::CheckpointCommitted() {
  if (!config_.release_read_bytes) return;
  for (const auto& [stream, policy] : release_) {
    StatusOr<ReleaseResult> released = tailer_->Release(stream);
    if (!released.ok()) {
      metrics_.ReleaseFailed();
      spdlog::error("release_read_bytes: {}; its read bytes stay on disk",
                    released.status().message());
      continue;
    }
    if (released->released_bytes > 0) metrics_.BytesReleased(released->released_bytes);
    if (released->allocated_bytes > policy.bound()) {
      metrics_.ReleaseOverBound();
      spdlog::warn(
          "{}: {} bytes on disk after a release, over max_retained_bytes {} (written "
          "faster than read)",
          released->path, released->allocated_bytes, policy.bound());
    }
  }
}

bool FileSource::Matches(const std::string& stream) const {
  for (const std::string& glob : config_.paths) {
    std::string absolute =
        glob.starts_with("/") ? glob : (std::filesystem::current_path() / glob).string();
    if (GlobMatch(std::filesystem::path(absolute).lexically_normal().string(), stream)) {
      return true;
    }
  }
  return false;
}

FileSource::StreamEntry& FileSource::Entry(const std::string& stream) {
  if (auto it = streams_.find(stream); it != streams_.end()) return it->second;
  SourceSpec spec;
  spec.name = stream;
  spec.deployment = config::DeploymentForPath(config_.labels, deployment_from_.get(), stream);
  spec.labels = config_.labels;
  spec.labels.erase("deployment");
  spec.parser.envelope = config_.format;
  spec.parser.max_line_bytes = tailer_config_.max_line_bytes;
  spec.parser.now_us = clock_();
  spec.parser.current_year = CurrentYear();
  spec.parser.wall_clock = clock_;  // the year of year-less lines, as they are read
  spec.read_as_written = true;      // a silent file holds its deployment only briefly (issue 29)
  if (auto it = restored_.find(stream); it != restored_.end()) spec.start = it->second.safe;
  StreamEntry& entry =
      streams_.emplace(stream, StreamEntry{pipeline_.AddSource(spec)}).first->second;
  if (config_.release_read_bytes) {
    release_.insert_or_assign(stream, ReleasePolicy(config_.max_retained_bytes));
  }
  spdlog::info("tailing {} (deployment {})", stream, spec.deployment);
  return entry;
}

std::optional<StreamCheckpoint> FileSource::OnOpen(const std::string& stream) {
  Register(stream);
  auto it = restored_.find(stream);
  if (it == restored_.end()) {
    new_stream_ = true;
    return std::nullopt;
  }
  metrics_.FileOpened("checkpoint");
  spdlog::info("{}: resuming from its checkpoint at byte {}", stream, it->second.safe.offset);
  return StreamCheckpoint{it->second.pieces, it->second.safe.offset, it->second.read};
}

void FileSource::OnBytes(const std::string& stream, std::string_view bytes, uint64_t offset) {
  StreamEntry& entry = Entry(stream);  // registered again after a deletion (OnEnded)
  entry.last_line_us = now_us_;
  pipeline_.Feed(entry.id, bytes, offset);
  if (config_.release_read_bytes) {
    auto it = release_.find(stream);
    if (it != release_.end()) {
      it->second.OnLine(offset);
      release_due_ = release_due_ || it->second.due();
    }
  }
}

void FileSource::OnLineEnd(const std::string& stream) {
  if (auto it = streams_.find(stream); it != streams_.end()) pipeline_.EndLine(it->second.id);
}

void FileSource::OnSwitched(const std::string& stream, bool truncated, const std::string& copy) {
  if (auto it = streams_.find(stream); it != streams_.end()) it->second.state = "reading";
  if (!truncated) {
    spdlog::info("{}: rotated; reading on from its byte 0", stream);
  } else if (!copy.empty()) {
    spdlog::info(
        "{}: truncated (copytruncate); reading what was not read yet from its copy {}, "
        "then on from its byte 0",
        stream, copy);
  } else {
    spdlog::info("{}: truncated, no copy found beside it; reading on from its byte 0", stream);
  }
}

void FileSource::OnStart(const std::string& stream, StartFrom from, uint64_t skipped) {
  switch (from) {
    case StartFrom::kBeginning:
      metrics_.FileOpened("beginning");
      break;
    case StartFrom::kEnd:
      metrics_.FileOpened("end");
      skipped_[stream] = skipped;
      spdlog::info("{}: start_at end: it existed before the daemon first ran; {} byte(s) skipped",
                   stream, skipped);
      break;
    case StartFrom::kBornWhileStopped:
      metrics_.FileOpened("born_while_stopped");
      spdlog::info(
          "{}: created while the daemon was stopped (after it first ran, not in its "
          "checkpoint); reading it from its beginning",
          stream);
      break;
  }
}

void FileSource::OnSourceProblem(const SourceProblem& problem, SourceHealth::Event event) {
  if (event == SourceHealth::Event::kResolved) {
    spdlog::info("file source {}: {}: {} resolved", config_.paths.front(), problem.path,
                 problem.reason);
    return;
  }
  metrics_.SourceError(problem.reason);
  if (event == SourceHealth::Event::kStill) return;  // logged when found
  spdlog::warn("file source {}: {}: {}: {}; retried at every rescan", config_.paths.front(),
               problem.path, problem.reason, problem.detail);
}

void FileSource::OnUnread(const std::string& stream, std::string_view reason, uint64_t bytes,
                          const std::string& detail) {
  metrics_.BytesUnread(reason);
  spdlog::warn("{}: {} byte(s) could not be read ({}): {}", stream,
               bytes > 0 ? std::to_string(bytes) : std::string("an unknown number of"), reason,
               detail);
}

void FileSource::OnDeleted(const std::string& stream, bool read_on) {
  if (auto it = streams_.find(stream); it != streams_.end()) {
    it->second.state = read_on ? "deleted, still written: read on" : "deleted, read to its end";
  }
  if (read_on) {
    spdlog::info("{} was deleted and is still written; reading on", stream);
  } else {
    spdlog::info("{} was deleted; read to its end", stream);
  }
}

void FileSource::AppendLags(std::vector<std::pair<std::string, uint64_t>>* out) const {
  for (auto& lag : tailer_->Lags()) out->push_back(std::move(lag));
}

std::vector<std::string> FileSource::Problems() const {
  std::vector<std::string> out;
  for (const SourceProblem& problem : tailer_->Problems()) {
    out.push_back(problem.path + ": " + problem.reason + " (" + problem.detail + ")");
  }
  return out;
}

void FileSource::AppendStatus(std::vector<SourceStatus>* out) const {
  std::map<std::string, uint64_t> lags;
  for (auto& [stream, lag] : tailer_->Lags()) lags.emplace(std::move(stream), lag);
  for (const auto& [stream, entry] : streams_) {
    SourceStatus& row = out->emplace_back();
    row.name = stream;
    row.type = "file";
    row.state = entry.state;
    if (auto it = lags.find(stream); it != lags.end() && it->second > 0) {
      row.state += ", " + std::to_string(it->second) + " byte(s) not read yet";
    }
    row.last_line_us = entry.last_line_us;
  }
  for (const SourceProblem& problem : tailer_->Problems()) {
    out->push_back({problem.path, "file", problem.reason + " (" + problem.detail + ")", 0, true});
  }
}

void FileSource::OnEnded(const std::string& stream) {
  spdlog::info("{}: ended (deleted, not created again)", stream);
  release_.erase(stream);
  skipped_.erase(stream);
  auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  pipeline_.ForgetSource(it->second.id);
  streams_.erase(it);
}

void FileSource::WaitForInotify() {
  if (!watcher_ || stopped_) return;
  descriptor_.async_wait(asio::posix::stream_descriptor::wait_read,
                         [this](const boost::system::error_code& ec) {
                           if (ec || stopped_) return;
                           const int64_t now = clock_();
                           if (now - last_inotify_read_us_ < kReadAtMostEveryUs) {
                             inotify_parked_ = true;  // read at the next Tick
                             return;
                           }
                           ReadWhatInotifyReported(now);
                           WaitForInotify();
                         });
}

void FileSource::ReadWhatInotifyReported(int64_t now_us) {
  SetNow(now_us);
  last_inotify_read_us_ = now_us;
  tailer_->HandleInotify(now_us);
  on_read_();
  AfterRead();
}

void FileSource::AfterRead() {
  for (const auto& [glob, files] : tailer_->GlobMatches()) metrics_.SetGlobMatched(glob, files);
  ReadOnSoon();
  if ((!release_due_ && !new_stream_) || stopped_) return;
  release_due_ = false;
  new_stream_ = false;
  request_checkpoint_();
}

void FileSource::ReadOnSoon() {
  if (read_on_posted_ || stopped_ || !tailer_->HasMoreToRead()) return;
  read_on_posted_ = true;
  asio::post(descriptor_.get_executor(), [this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired()) return;
    read_on_posted_ = false;
    if (stopped_ || !tailer_->HasMoreToRead()) return;
    const int64_t now = clock_();
    SetNow(now);
    PollNow(now);
    on_read_();
    AfterRead();
  });
}

}  // namespace fingerprintd::source
