// SourceParser's state, shared by its two files: source_parser.cc (the
// line path) and source_parser_state.cc (what a checkpoint keeps of it).
// Internal to src/parse/.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fingerprintd/parse.h"
#include "parse/envelope.h"
#include "parse/header.h"
#include "parse/line_templates.h"
#include "parse/prefix.h"
#include "parse/source_parser_fast_path.h"
#include "parse/time_util.h"
#include "parse/traceback_assembler.h"

namespace fingerprintd::parse {

constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
// Time changes kept for SaveState (SourceParser::ForgetTimesBefore); beyond,
// the older half is folded into the base.
constexpr size_t kMaxTimeChanges = 65536;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

inline bool SameCivil(const CivilTime& a, const CivilTime& b) {
  return a.second == b.second && a.minute == b.minute && a.hour == b.hour && a.day == b.day &&
         a.month == b.month && a.year == b.year && a.micros == b.micros;
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
  // What Process read of a line, for LearnTemplate.
  struct Shape {
    WorkerInfo* worker = nullptr;
    size_t consumed = 0;                            // the cleaned prefix chain's bytes
    size_t raw_chain_end = std::string_view::npos;  // its raw bytes, when the raw prefix gave them
    std::string_view clean;                         // the cleaned line ("" on a raw prefix hit)
    std::string_view rest;                          // what the header was read from
    Header header;
  };
  // A line with a template (parse/line_templates.h) whose record the sink
  // takes as quiet: its times set as Process would set them. False: parse it.
  bool SkipQuietLine(const EnvelopeRecord& rec);
  void LearnTemplate(const EnvelopeRecord& rec, const Shape& line);
  // The event time of a line of `worker` in `rec` whose header has the time
  // *header_time (null: none), and the fallback it counts. False when
  // neither the line nor the source has a time yet.
  bool DateLine(const CivilTime* header_time, const EnvelopeRecord& rec, uint32_t worker,
                int64_t* time_us, std::optional<TimeFallback>* guessed);
  // Runs one message of `rec` (the line's, or a piece message_reading.h read
  // out of it) through the traceback assembler to the sink.
  LineKind Deliver(const EnvelopeRecord& rec, WorkerInfo* worker, const Header& header,
                   bool has_header, std::string_view message, int64_t time_us);
  WorkerInfo* Lookup(const ProcessId& id, std::string_view key);
  WorkerInfo* Recycle(const ProcessId& id);
  static void IndexKey(std::string_view name, int32_t pid, std::string_view ip, std::string* out);
  int64_t HeaderTime(const CivilTime& t, const EnvelopeRecord& rec,
                     std::optional<TimeFallback>* guessed);
  // Whether a line dated by `header_time` (null: none) in `rec` gave its
  // year: a full date in its header, or an envelope's known year.
  static bool GivesYear(const CivilTime* header_time, const EnvelopeRecord& rec) {
    return (header_time != nullptr && header_time->year != 0) ||
           (rec.has_time && rec.year == EnvelopeYear::kKnown);
  }
  // The year guessed from the file's mtime or the clock (GuessedHeaderTime).
  int64_t GuessedYearTime(const CivilTime& t, int32_t offset, std::optional<TimeFallback>* guessed);

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
  uint64_t reread_until = 0;  // CountAsRereadUntil
  std::string clean_scratch;
  std::string repr_scratch;                // ReadReprStrings' text
  std::vector<std::string> escaped_lines;  // SplitEscapedLines' pieces
  WorkerInfo* unprefixed = nullptr;
  WorkerInfo* header_worker = nullptr;  // rank named by the last record's header
  // Consecutive lines mostly come from a few processes: their prefix bytes
  // are compared before parsing (PrefixCache), the innermost prefix's text
  // (or the header's rank tags) with the last few looked up before hashing.
  PrefixCache prefix_cache;
  // The pipeline's fast path (source_parser_fast_path.h): the search of the
  // buffer the lines being fed are views of, and who may take a quiet line
  // whole. Null: every line takes the per-line path.
  const BufferHints* hints = nullptr;
  QuietLineTaker* quiet = nullptr;
  LineTemplates templates;  // with hints only
  struct RecentKey {
    std::string key;
    WorkerInfo* worker = nullptr;
  };
  static constexpr size_t kRecentKeys = 4;
  RecentKey recent_keys[kRecentKeys];
  size_t next_recent_key = 0;
  std::string key_scratch;
  std::unordered_map<std::string, WorkerInfo*, StringHash, std::equal_to<>> index;
  std::vector<int64_t> last_time;  // per WorkerInfo::id
  int64_t source_last_time = kNoTime;
  // The time of the source's latest line that gave its year (a full date in
  // its header, or an envelope's): what a header without a year is dated
  // near (HeaderTime).
  int64_t source_dated_time = kNoTime;
  // The changes of those times since a line the pipeline may still read
  // again (ForgetTimesBefore), so SaveState can give the times a restart at
  // that line must start from: the same untimed lines then get the same
  // times. TimesAt(line) = the base, then every change up to that line.
  struct TimeChange {
    uint64_t line;
    uint32_t worker;
    int64_t time;
    bool source;  // source_last_time set too
    bool dated;   // source_dated_time set too
  };
  struct Times {
    std::vector<int64_t> last;
    int64_t source = kNoTime;
    int64_t dated = kNoTime;
  };
  std::deque<TimeChange> time_changes;
  Times base_times;

  // Whether a header time is after the line can have been written, by more
  // than the widest zone offset: after its envelope's time (the runtime
  // stamped it as it was written), else after the wall clock (live), the
  // file's mtime, or when the replay started (stdin). Without an envelope the
  // bound is cached in misdated_after_us (it only grows) and read again only
  // for a time above it.
  bool Misdated(int64_t time_us, const EnvelopeRecord& rec) {
    if (rec.has_time && rec.year == EnvelopeYear::kKnown) {
      return time_us > rec.time_us + kMisdatedSlackUs;
    }
    if (time_us <= misdated_after_us) return false;
    const int64_t latest = options.wall_clock != nullptr ? options.wall_clock()
                           : options.mtime_us != 0       ? options.mtime_us
                                                         : options.now_us;
    if (latest == 0) {
      misdated_after_us = std::numeric_limits<int64_t>::max();  // nothing to go by
      return false;
    }
    misdated_after_us = latest + kMisdatedSlackUs;
    return time_us > misdated_after_us;
  }
  int64_t misdated_after_us = kNoTime;

  void SetTime(uint32_t worker, int64_t time_us, bool source, bool dated = false) {
    if (worker >= last_time.size()) last_time.resize(worker + 1, kNoTime);
    if (last_time[worker] == time_us && (!source || source_last_time == time_us) &&
        (!dated || source_dated_time == time_us)) {
      return;
    }
    last_time[worker] = time_us;
    if (source) source_last_time = time_us;
    if (dated) source_dated_time = time_us;
    time_changes.push_back({line_number, worker, time_us, source, dated});
    if (time_changes.size() > kMaxTimeChanges)
      ForgetTimesBefore(time_changes[kMaxTimeChanges / 2].line);
  }
  void ForgetTimesBefore(uint64_t line) {
    while (!time_changes.empty() && time_changes.front().line <= line) {
      Apply(time_changes.front(), &base_times);
      time_changes.pop_front();
    }
  }
  static void Apply(const TimeChange& c, Times* times) {
    if (c.worker >= times->last.size()) times->last.resize(c.worker + 1, kNoTime);
    times->last[c.worker] = c.time;
    if (c.source) times->source = c.time;
    if (c.dated) times->dated = c.time;
  }
  Times TimesAt(uint64_t line) const {
    Times times = base_times;
    for (const TimeChange& c : time_changes) {
      if (c.line > line) break;
      Apply(c, &times);
    }
    return times;
  }
  // HeaderTime of the previous header (most lines repeat its second).
  struct {
    bool valid = false;
    CivilTime t;
    int32_t offset = 0;
    int64_t result = 0;
  } year_cache;
  struct {
    bool valid = false;
    CivilTime t;
    int64_t days = 0;
    int32_t offset = 0;
    int64_t candidates[3] = {0, 0, 0};  // the envelope's local year, the one before, after
  } envelope_cache;
  // HeaderTime of a header without a year in a source that gave its year.
  struct {
    bool valid = false;
    CivilTime t;
    int32_t offset = 0;
    int64_t dated_us = 0;  // source_dated_time
    int64_t guess = 0;     // the guessed year's time it is bounded by
    int64_t result = 0;
  } reference_cache;
  struct {
    bool valid = false;
    CivilTime t;
    int32_t offset = 0;
    int64_t result = 0;
    int64_t changes_at_us = 0;  // live: the wall time from which the year may differ
    TimeFallback fallback = TimeFallback::kYearFromClock;
  } guess_cache;
  // The line being delivered was dated by reading it (LogRecord::time_read).
  bool time_read = false;

  // Buffer-first only. The raw bytes of a recent line up to the end of its
  // process prefix chain, and the worker that chain named.
  //
  // Why a line L = raw + rest, with `rest` non-empty printable ASCII, gets
  // exactly what the per-line path computes:
  // - CleanLine(L) = CleanLine(raw) + rest = chain + rest: every escape
  //   sequence of `raw` ends before its last byte (checked when kept), so
  //   its length does not depend on what follows; `rest` has no ESC, no
  //   control byte, no '\r', no non-ASCII byte; no flag is raised.
  // - StripPasteWrappers leaves a line starting with '(' as it is.
  // - The prefix parse of chain + rest is the chain's when `rest` cannot
  //   extend it: the PrefixCache::Hit conditions (no separating space the
  //   chain lacked, no '(' or '[' after the spaces), and PrefixCache is
  //   tested equal to ParsePrefixes.
  // - Lookup maps the chain's (name, pid, ip) to the same worker as long as
  //   no stream was recycled since (Recycle() drops every entry).
  struct RawPrefix {
    std::string raw;  // "" = unused
    bool ends_in_space = false;
    size_t chain_size = 0;  // bytes of the cleaned chain (consumed)
    WorkerInfo* worker = nullptr;
  };
  static constexpr size_t kRawPrefixes = 8;
  RawPrefix raw_prefixes[kRawPrefixes];
  size_t raw_last_hit = 0;
  size_t raw_next_victim = 0;

  bool RawPrefixHit(std::string_view content, WorkerInfo** worker, size_t* chain_size,
                    std::string_view* rest);
  void KeepRawPrefix(std::string_view content, std::string_view clean, size_t consumed,
                     WorkerInfo* worker);
};

}  // namespace fingerprintd::parse
