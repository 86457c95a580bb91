// SourceParser (fingerprintd/parse.h): glues the stages of one source.
//
//   Feed(line) -> cap -> EnvelopeDecoder -> CleanLine (ANSI, \r, UTF-8)
//     -> StripPasteWrappers (quotes, CI times, grep -n, kubectl, TorchServe)
//     -> ParsePrefixes (worker) -> AfterProgressBar (tqdm glue) -> ParseHeader (level, time,
//     location)
//     -> event time -> Ray rank learning -> TracebackAssembler -> RecordSink
//
// Choices worth knowing:
// - LineRead() reports the physical line's bytes plus its '\n' (the caller
//   strips it), so bytes_total tracks the file size.
// - Event time: the header's time; else the envelope's; else the stream's
//   last time or the source's last time, whichever is later; else 0
//   (kNoTimestamp counted).
//   A header without a year takes it from the envelope (the year of Y-1, Y,
//   Y+1 closest to the envelope time, so Dec 31 / Jan 1 works), else from the
//   file's mtime, else from the injected current year (both counted). Header
//   times are converted with the envelope's zone offset when it has one, else
//   with ParserOptions::local_utc_offset_s.
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>

#include "fingerprintd/parse.h"
#include "parse/ansi.h"
#include "parse/envelope.h"
#include "parse/header.h"
#include "parse/paste_wrappers.h"
#include "parse/prefix.h"
#include "parse/traceback_assembler.h"

namespace fingerprintd::parse {
namespace {

constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
constexpr int64_t kMicrosPerSecond = 1'000'000;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Reads digits at s[pos]; -1 if none.
int32_t DigitsAt(std::string_view s, size_t pos) {
  int64_t v = 0;
  size_t i = pos;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && v < 1'000'000) v = v * 10 + (s[i++] - '0');
  return i == pos ? -1 : static_cast<int32_t>(v);
}

// Cuts `line` to at most `max` bytes without splitting a UTF-8 sequence.
std::string_view CapLine(std::string_view line, size_t max) {
  size_t cut = max;
  for (int back = 0; back < 3 && cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80;
       ++back) {
    --cut;
  }
  return line.substr(0, cut);
}

}  // namespace

std::string_view EnvelopeName(Envelope envelope) {
  switch (envelope) {
    case Envelope::kAuto:
      return "auto";
    case Envelope::kPlain:
      return "plain";
    case Envelope::kCri:
      return "cri";
    case Envelope::kDocker:
      return "docker";
    case Envelope::kJournald:
      return "journald";
    case Envelope::kCompose:
      return "compose";
  }
  return "auto";
}

bool ParseEnvelopeName(std::string_view name, Envelope* out) {
  for (Envelope e : {Envelope::kAuto, Envelope::kPlain, Envelope::kCri, Envelope::kDocker,
                     Envelope::kJournald, Envelope::kCompose}) {
    if (name == EnvelopeName(e)) {
      *out = e;
      return true;
    }
  }
  return false;
}

struct SourceParser::Impl {
  Impl(uint32_t id, std::string name, ParserOptions opts, PipelineEvents& ev, RecordSink& sk)
      : source_id(id),
        source_name(std::move(name)),
        options(opts),
        events(ev),
        sink(sk),
        envelope(options.envelope, options, events),
        assembler(source_id, options, events, sink) {
    unprefixed = workers.Unprefixed();
  }

  void Feed(std::string_view line);
  void Process(const EnvelopeRecord& rec);
  WorkerInfo* Lookup(const ProcessId& id, std::string_view key);
  WorkerInfo* Recycle(const ProcessId& id);
  static void IndexKey(std::string_view name, int32_t pid, std::string_view ip, std::string* out);
  int64_t HeaderTime(const CivilTime& t, const EnvelopeRecord& rec);
  void LearnRank(WorkerInfo* worker, std::string_view message);

  const uint32_t source_id;
  const std::string source_name;
  const ParserOptions options;
  PipelineEvents& events;
  RecordSink& sink;
  EnvelopeDecoder envelope;
  WorkerTable workers;
  TracebackAssembler assembler;

  uint64_t line_number = 0;
  uint64_t offset = 0;
  std::string clean_scratch;
  WorkerInfo* unprefixed = nullptr;
  WorkerInfo* header_worker = nullptr;  // rank named by the last record's header
  // Consecutive lines mostly come from the same process: their prefix bytes
  // are compared before parsing (PrefixCache), the innermost prefix's text
  // before hashing (last_key).
  PrefixCache prefix_cache;
  std::string last_key;
  WorkerInfo* last_worker = nullptr;
  std::string key_scratch;
  std::unordered_map<std::string, WorkerInfo*, StringHash, std::equal_to<>> index;
  std::vector<int64_t> last_time;  // per WorkerInfo::id
  int64_t source_last_time = kNoTime;
};

WorkerInfo* SourceParser::Impl::Lookup(const ProcessId& id, std::string_view key) {
  if (last_worker != nullptr && key == last_key) return last_worker;
  IndexKey(id.name, id.pid, id.ip, &key_scratch);
  WorkerInfo* worker;
  auto it = index.find(std::string_view(key_scratch));
  if (it != index.end()) {
    worker = it->second;
  } else {
    // The unprefixed stream is not a process and does not count.
    if (workers.size() > options.max_workers) {
      worker = Recycle(id);
    } else {
      worker = workers.Intern(id.role, id.name, id.pid, id.ip);
    }
    worker->dp = id.dp, worker->pp = id.pp, worker->tp = id.tp, worker->ep = id.ep;
    worker->rank = id.rank;
    index.emplace(key_scratch, worker);
  }
  last_key.assign(key.data(), key.size());
  last_worker = worker;
  return worker;
}

void SourceParser::Impl::IndexKey(std::string_view name, int32_t pid, std::string_view ip,
                                  std::string* out) {
  out->assign(name.data(), name.size());
  *out += '\x1f';
  *out += std::to_string(pid);
  *out += '\x1f';
  out->append(ip.data(), ip.size());
}

// The table is full: the process stream silent the longest (event time) is
// forgotten — its traceback emitted, the engine told — and its slot reused.
WorkerInfo* SourceParser::Impl::Recycle(const ProcessId& id) {
  WorkerInfo* victim = nullptr;
  int64_t oldest = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < workers.size(); ++i) {
    WorkerInfo* w = workers.Mutable(static_cast<uint32_t>(i));
    if (w == unprefixed || w == header_worker) continue;
    const int64_t t = w->id < last_time.size() ? last_time[w->id] : kNoTime;
    if (victim == nullptr || t < oldest) {
      victim = w;
      oldest = t;
    }
  }
  assembler.Forget(victim);
  sink.OnStreamForgotten(*victim);
  events.StateEvicted(Evicted::kProcessStream);
  std::string old_key;
  IndexKey(victim->name, victim->pid, victim->ip, &old_key);
  index.erase(old_key);
  if (last_worker == victim) last_worker = nullptr;
  WorkerTable::Reuse(victim, id.role, id.name, id.pid, id.ip);
  if (victim->id < last_time.size()) last_time[victim->id] = kNoTime;
  return victim;
}

int64_t SourceParser::Impl::HeaderTime(const CivilTime& t, const EnvelopeRecord& rec) {
  const bool envelope_year = rec.has_time && rec.year == EnvelopeYear::kKnown;
  const int32_t offset = envelope_year ? rec.zone_offset_s : options.local_utc_offset_s;
  if (t.year != 0) return CivilToUnixMicros(t, t.year, offset);
  if (envelope_year) {
    // The envelope's local calendar year, then whichever neighbour puts the
    // header closest to the envelope time (a Dec 31 line read on Jan 1).
    int64_t local_secs = rec.time_us / kMicrosPerSecond + offset;
    int64_t days = local_secs / 86400 - (local_secs % 86400 < 0 ? 1 : 0);
    int32_t y, m, d;
    CivilFromDays(days, &y, &m, &d);
    int64_t best = CivilToUnixMicros(t, y, offset);
    for (int32_t candidate : {y - 1, y + 1}) {
      const int64_t v = CivilToUnixMicros(t, candidate, offset);
      if ((v > rec.time_us ? v - rec.time_us : rec.time_us - v) <
          (best > rec.time_us ? best - rec.time_us : rec.time_us - best)) {
        best = v;
      }
    }
    return best;
  }
  // No year anywhere: the latest year that does not date the line after
  // `limit`, the last moment it can have been written (ParserOptions::mtime_us).
  // The widest zone offset is allowed on top, since the header's zone is
  // often unknown: a wrong hour beats a wrong year.
  constexpr int64_t kZoneSlackUs = 14LL * 3600 * kMicrosPerSecond;
  int64_t limit = 0;
  TimeFallback fallback = TimeFallback::kYearFromClock;
  if (options.mtime_us > 0) {
    limit = options.mtime_us + kZoneSlackUs;
    fallback = TimeFallback::kYearFromMtime;
  } else if (options.mtime_year > 0) {
    const CivilTime year_end{0, 12, 31, 23, 59, 59, 999'999};
    limit = CivilToUnixMicros(year_end, options.mtime_year, offset);
    if (options.now_us > 0 && options.now_us + kZoneSlackUs < limit) {
      limit = options.now_us + kZoneSlackUs;
    }
    fallback = TimeFallback::kYearFromMtime;
  } else if (options.now_us > 0) {
    limit = options.now_us + kZoneSlackUs;
  }
  events.TimeGuessed(fallback);
  if (limit == 0) return CivilToUnixMicros(t, options.current_year, offset);
  return LatestNotAfter(t, limit, offset);
}

void SourceParser::Impl::LearnRank(WorkerInfo* worker, std::string_view message) {
  // vLLM parallel_state: "world_size=2 rank=1 local_rank=0 ..." (Ray workers
  // carry no rank in their prefix, so this is where it comes from).
  size_t at = message.find("world_size=");
  if (at != std::string_view::npos) {
    const size_t r = message.find(" rank=", at);
    if (r != std::string_view::npos) {
      const int32_t rank = DigitsAt(message, r + 6);
      if (rank >= 0) worker->rank = rank;
    }
    return;
  }
  // "rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, ..., TP rank 1, EP rank 1"
  if (message.substr(0, 5) != "rank " ||
      message.find(" in world size ") == std::string_view::npos) {
    return;
  }
  const int32_t rank = DigitsAt(message, 5);
  if (rank >= 0) worker->rank = rank;
  auto field = [&](std::string_view tag, int32_t* out) {
    const size_t p = message.find(tag);
    if (p == std::string_view::npos) return;
    const int32_t v = DigitsAt(message, p + tag.size());
    if (v >= 0 && *out < 0) *out = v;
  };
  field(" TP rank ", &worker->tp);
  field(" PP rank ", &worker->pp);
  field(" DP rank ", &worker->dp);
  field(" EP rank ", &worker->ep);
}

void SourceParser::Impl::Process(const EnvelopeRecord& rec) {
  CleanFlags flags;
  std::string_view clean = CleanLine(rec.content, &clean_scratch, &flags);
  if (flags.binary) events.LineDropped(DropReason::kBinary);
  if (flags.invalid_utf8) events.LineDropped(DropReason::kInvalidUtf8);
  if (!clean.empty()) clean = StripPasteWrappers(clean);

  WorkerInfo* worker = unprefixed;
  size_t consumed = 0;
  if (!clean.empty() && (clean[0] == '(' || clean[0] == '[')) {
    ProcessId id;
    std::string_view key;
    consumed = prefix_cache.Parse(clean, &id, &key);
    if (consumed > 0) worker = Lookup(id, key);
  }
  std::string_view rest = clean.substr(consumed);
  while (!rest.empty() && rest[0] == '\r') rest.remove_prefix(1);  // tqdm after a prefix
  rest = AfterProgressBar(rest);

  Header header;
  const bool has_header = ParseHeader(rest, &header);
  // A host application's logger around the engine's own line: "2026-06-01
  // 10:00:00,123 - app.engine - INFO - (Worker_TP0 pid=7) ERROR 06-01 ...".
  // The engine's prefix and header inside are the ones that count.
  if (has_header &&
      (header.kind == HeaderKind::kPythonLogging || header.kind == HeaderKind::kGenericTime) &&
      !header.message.empty() &&
      (header.message[0] == '(' || header.message[0] == '[' ||
       (header.message[0] >= 'A' && header.message[0] <= 'Z'))) {
    std::string_view inner = header.message;
    ProcessId id;
    std::string_view key;
    const size_t n = inner[0] == '(' ? ParsePrefixes(inner, &id, &key) : 0;
    Header inner_header;
    if (ParseHeader(inner.substr(n), &inner_header) &&
        inner_header.kind != HeaderKind::kGenericTime) {
      if (n > 0) {
        worker = Lookup(id, key);
        consumed = n;
      }
      header = inner_header;
    }
  }
  if (header.has_worker) {
    worker = Lookup(header.worker, header.worker.name);
    header_worker = worker;
  } else if (consumed > 0 || has_header) {
    header_worker = nullptr;
  } else if (header_worker != nullptr) {
    // SGLang/TRT-LLM name the rank only in the header of a record's first
    // line; raw lines after it (a traceback inside one record) are its
    // continuation, so they stay with that rank.
    worker = header_worker;
  }

  if (worker->id >= last_time.size()) last_time.resize(worker->id + 1, kNoTime);
  int64_t time_us;
  if (header.has_time) {
    time_us = HeaderTime(header.time, rec);
  } else if (rec.has_time) {
    time_us = rec.time_us;
    if (rec.year == EnvelopeYear::kFromMtime) events.TimeGuessed(TimeFallback::kYearFromMtime);
    if (rec.year == EnvelopeYear::kFromClock) events.TimeGuessed(TimeFallback::kYearFromClock);
  } else if (last_time[worker->id] != kNoTime &&
             (source_last_time == kNoTime || last_time[worker->id] >= source_last_time)) {
    time_us = last_time[worker->id];
  } else if (source_last_time != kNoTime) {
    // A line without a time (an interpreter's traceback, a C++ abort, NCCL)
    // is written now: the source's latest time dates it better than its
    // stream's last header, which may be a start-up line minutes earlier
    // (an API server silent until its final traceback).
    time_us = source_last_time;
  } else {
    events.TimeGuessed(TimeFallback::kNoTimestamp);
    time_us = 0;
  }
  if (header.has_time || rec.has_time) {
    last_time[worker->id] = time_us;
    source_last_time = time_us;
  }

  if (worker->role == ProcessRole::kWorker && worker->rank < 0 &&
      header.location.find("parallel_state") != std::string_view::npos) {
    LearnRank(worker, header.message);
  }

  TracebackInput in;
  in.worker = worker;
  in.message = header.message;
  in.has_header = has_header;
  in.warning_header = header.kind == HeaderKind::kPythonWarning;
  in.header_text = header.text;
  in.level = header.level;
  in.line_number = rec.line_number;
  in.offset = rec.offset;
  in.time_us = time_us;
  const TracebackOutput tb = assembler.Process(in);

  LogRecord record;
  record.source_id = source_id;
  record.line_number = rec.line_number;
  record.offset = rec.offset;
  record.worker = worker;
  record.level = tb.level;
  record.kind = tb.kind;
  record.headered = has_header;
  record.time_us = time_us;
  record.location = header.location;
  record.message = header.message;
  record.raw = rec.content;
  sink.OnRecord(record);
}

void SourceParser::Impl::Feed(std::string_view line) {
  ++line_number;
  const uint64_t line_offset = offset;
  offset += line.size() + 1;
  events.LineRead(source_name, line.size() + 1);
  if (line.size() > options.max_line_bytes) {
    line = CapLine(line, options.max_line_bytes);
    events.LineDropped(DropReason::kLineTooLong);
  }
  EnvelopeRecord rec;
  if (envelope.Decode(line, line_number, line_offset, &rec)) Process(rec);
}

SourceParser::SourceParser(uint32_t source_id, std::string source_name, ParserOptions options,
                           PipelineEvents& events, RecordSink& sink)
    : impl_(std::make_unique<Impl>(source_id, std::move(source_name), options, events, sink)) {}

SourceParser::~SourceParser() = default;

void SourceParser::Feed(std::string_view line) { impl_->Feed(line); }
void SourceParser::LowestHeld(SourcePosition* pos) const {
  impl_->envelope.LowestHeld(pos);
  impl_->assembler.LowestHeld(pos);
}

void SourceParser::Seek(uint64_t offset, uint64_t lines_before) {
  impl_->offset = offset;
  impl_->line_number = lines_before;
}

void SourceParser::Tick(int64_t now_us) { impl_->assembler.Tick(now_us); }

void SourceParser::Finish() {
  EnvelopeRecord rec;
  while (impl_->envelope.Flush(&rec)) impl_->Process(rec);
  impl_->assembler.Finish();
}

Envelope SourceParser::envelope() const { return impl_->envelope.envelope(); }

const WorkerTable& SourceParser::workers() const { return impl_->workers; }

const std::string& SourceParser::source_name() const { return impl_->source_name; }

}  // namespace fingerprintd::parse
