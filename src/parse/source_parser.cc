// SourceParser (fingerprintd/parse.h): glues the stages of one source.
//
//   Feed(line) -> cap -> EnvelopeDecoder -> CleanLine (ANSI, \r, UTF-8)
//     -> StripPasteWrappers (quotes, CI times, grep -n, kubectl, TorchServe)
//     -> ParsePrefixes (worker) -> AfterProgressBar (tqdm glue) -> ParseHeader (level, time,
//     location)
//     -> event time -> Ray rank learning -> TracebackAssembler -> RecordSink
//
// The pipeline's fast path (source_parser_fast_path.h), three tiers skip work
// whose result the line's bytes already decide:
// - PrefixCache: a chain of process prefixes seen a few lines before;
// - the raw prefix: a line starting with a recent line's raw chain (ANSI
//   included), followed by plain printable ASCII that cannot extend it,
//   skips CleanLine, StripPasteWrappers, the prefix parse and the worker
//   lookup (RawPrefix below says why);
// - line templates (parse/line_templates.h): a line the read buffer's search
//   vouches holds no atom and no trigger, of a source whose traceback reading
//   is idle, starting with a template's head, is dated as Process would date
//   it and offered as a quiet line (QuietLineTaker::TakeQuietLine);
//   taken, the rest of the parse is skipped. Templates are learnt in Process
//   from the lines it parses.
// A record whose message lies in buffer bytes without any prefilter atom is
// marked atom-free for the engine. Without hints every line takes the
// per-line path, the oracle the buffer-first one is tested against
// (tests/parse/buffer_first_test.cc).
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
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>

#include "fingerprintd/parse.h"
#include "parse/ansi.h"
#include "parse/buffer_hints.h"
#include "parse/envelope.h"
#include "parse/header.h"
#include "parse/line_templates.h"
#include "parse/message_reading.h"
#include "parse/paste_wrappers.h"
#include "parse/prefix.h"
#include "parse/rank_learning.h"
#include "parse/source_parser_impl.h"
#include "parse/traceback_assembler.h"

namespace fingerprintd::parse {
namespace {

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

bool SourceParser::Impl::RawPrefixHit(std::string_view content, WorkerInfo** worker,
                                      size_t* chain_size, std::string_view* rest) {
  auto hit = [&](const RawPrefix& e) {
    const size_t n = e.raw.size();
    if (n == 0 || content.size() <= n || content[0] != e.raw[0] ||
        std::memcmp(content.data(), e.raw.data(), n) != 0) {
      return false;
    }
    std::string_view after = content.substr(n);
    if (!e.ends_in_space && after[0] == ' ') return false;
    size_t next = 0;
    while (next < after.size() && after[next] == ' ') ++next;
    if (next < after.size() && (after[next] == '(' || after[next] == '[')) return false;
    if (!IsPlainAscii(after)) return false;
    *worker = e.worker;
    *chain_size = e.chain_size;
    *rest = after;
    return true;
  };
  if (hit(raw_prefixes[raw_last_hit])) return true;
  for (size_t i = 0; i < kRawPrefixes; ++i) {
    if (i != raw_last_hit && hit(raw_prefixes[i])) {
      raw_last_hit = i;
      return true;
    }
  }
  return false;
}

// Keeps the raw bytes of `content` that clean to clean[0, consumed), when the
// mapping is one a later line can reuse (see RawPrefix).
void SourceParser::Impl::KeepRawPrefix(std::string_view content, std::string_view clean,
                                       size_t consumed, WorkerInfo* worker) {
  if (consumed == 0 || consumed > clean.size() || clean[0] != '(') return;
  const size_t raw_size = RawLengthOf(content, clean.substr(0, consumed));
  if (raw_size == std::string_view::npos || raw_size >= content.size()) return;
  RawPrefix& e = raw_prefixes[raw_next_victim];
  raw_last_hit = raw_next_victim;
  raw_next_victim = (raw_next_victim + 1) % kRawPrefixes;
  e.raw.assign(content.data(), raw_size);
  e.ends_in_space = clean[consumed - 1] == ' ';
  e.chain_size = consumed;
  e.worker = worker;
}

WorkerInfo* SourceParser::Impl::Lookup(const ProcessId& id, std::string_view key) {
  for (const RecentKey& r : recent_keys) {
    if (r.worker != nullptr && key == r.key) return r.worker;
  }
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
  RecentKey& r = recent_keys[next_recent_key];
  next_recent_key = (next_recent_key + 1) % kRecentKeys;
  r.key.assign(key.data(), key.size());
  r.worker = worker;
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
  for (RecentKey& r : recent_keys) {
    if (r.worker == victim) r.worker = nullptr;
  }
  for (RawPrefix& e : raw_prefixes) e.raw.clear();
  templates.Forget();
  WorkerTable::Reuse(victim, id.role, id.name, id.pid, id.ip);
  if (victim->id < last_time.size()) SetTime(victim->id, kNoTime, false);
  return victim;
}

int64_t SourceParser::Impl::HeaderTime(const CivilTime& t, const EnvelopeRecord& rec,
                                       std::optional<TimeFallback>* guessed) {
  const bool envelope_year = rec.has_time && rec.year == EnvelopeYear::kKnown;
  const int32_t offset = envelope_year ? rec.zone_offset_s : options.local_utc_offset_s;
  if (t.year != 0) {
    if (!year_cache.valid || !SameCivil(year_cache.t, t) || year_cache.offset != offset) {
      year_cache.valid = true;
      year_cache.t = t;
      year_cache.offset = offset;
      year_cache.result = CivilToUnixMicros(t, t.year, offset);
    }
    return year_cache.result;
  }
  if (envelope_year) {
    // The envelope's local calendar year, then whichever neighbour puts the
    // header closest to the envelope time (a Dec 31 line read on Jan 1).
    const int64_t days = LocalDayOf(rec.time_us, offset);
    // The three candidates depend on (t, days, offset) only; consecutive
    // lines mostly repeat them.
    if (!envelope_cache.valid || !SameCivil(envelope_cache.t, t) || envelope_cache.days != days ||
        envelope_cache.offset != offset) {
      envelope_cache.valid = true;
      envelope_cache.t = t;
      envelope_cache.days = days;
      envelope_cache.offset = offset;
      NearestYearCandidates(t, days, offset, envelope_cache.candidates);
    }
    return NearestTo(envelope_cache.candidates, rec.time_us);
  }
  const int64_t guess = GuessedYearTime(t, offset, guessed);
  if (source_dated_time == kNoTime) return guess;
  // The source gave its year before (a full date in a header, Ray's or a
  // launcher's or a shipper's in front of NCCL's): of the header's time in
  // that year, the one before and the one after, the first from that line
  // on, but not later than the latest the line can have been written (the
  // guess's bound, or the dated line itself when the file's mtime is older
  // than what it says: a copied file), so a log mixing dated and yearless
  // lines keeps one calendar. Still a guess of the year, counted as the
  // guess's fallback.
  if (reference_cache.valid && SameCivil(reference_cache.t, t) &&
      reference_cache.offset == offset && reference_cache.dated_us == source_dated_time &&
      reference_cache.guess == guess) {
    return reference_cache.result;
  }
  int64_t candidates[3];
  NearestYearCandidates(t, LocalDayOf(source_dated_time, offset), offset, candidates);
  const int64_t bound = std::max(guess, source_dated_time + kYearGuessZoneSlackUs);
  // A log goes forward: the first candidate from the dated line on (less
  // the zone slack), else the nearest before it.
  const int64_t from = source_dated_time - kYearGuessZoneSlackUs;
  int64_t best = guess;
  bool found = false, forward = false;
  for (const int64_t c : candidates) {
    if (c > bound) continue;
    const bool ahead = c >= from;
    const bool better =
        !found || (ahead && (!forward || c < best)) || (!ahead && !forward && c > best);
    if (better) {
      best = c;
      found = true;
      forward = ahead;
    }
  }
  reference_cache = {true, t, offset, source_dated_time, guess, best};
  return best;
}

int64_t SourceParser::Impl::GuessedYearTime(const CivilTime& t, int32_t offset,
                                            std::optional<TimeFallback>* guessed) {
  // The result depends on t, offset, the options and, live, on the wall
  // clock only through the year: it holds until changes_at_us.
  if (guess_cache.valid && SameCivil(guess_cache.t, t) && guess_cache.offset == offset &&
      (options.wall_clock == nullptr || options.wall_clock() < guess_cache.changes_at_us)) {
    *guessed = guess_cache.fallback;
    return guess_cache.result;
  }
  guess_cache.valid = true;
  guess_cache.t = t;
  guess_cache.offset = offset;
  guess_cache.result = GuessedHeaderTime(options, t, offset, &guess_cache.fallback);
  guess_cache.changes_at_us =
      options.wall_clock == nullptr
          ? std::numeric_limits<int64_t>::max()
          : YearGuessChangesAt(t, guess_cache.result, offset, kYearGuessZoneSlackUs);
  *guessed = guess_cache.fallback;
  return guess_cache.result;
}

bool SourceParser::Impl::DateLine(const CivilTime* header_time, const EnvelopeRecord& rec,
                                  uint32_t worker, int64_t* time_us,
                                  std::optional<TimeFallback>* guessed) {
  if (header_time != nullptr) {
    *time_us = HeaderTime(*header_time, rec, guessed);
    // A header dated after the line can have been written (a full date far
    // ahead, a yearless one put in the wrong year) is misdated: its
    // neighbours date it, so one line never moves the deployment's clock
    // past its open incidents' lifetime.
    if (Misdated(*time_us, rec)) {
      *time_us = rec.has_time                  ? rec.time_us
                 : source_last_time != kNoTime ? source_last_time
                                               : misdated_after_us - kMisdatedSlackUs;
      *guessed = TimeFallback::kMisdated;
    }
    return true;
  }
  if (rec.has_time) {
    *time_us = rec.time_us;
    if (rec.year == EnvelopeYear::kFromMtime) *guessed = TimeFallback::kYearFromMtime;
    if (rec.year == EnvelopeYear::kFromClock) *guessed = TimeFallback::kYearFromClock;
    return true;
  }
  const int64_t stream_time = worker < last_time.size() ? last_time[worker] : kNoTime;
  if (stream_time != kNoTime && (source_last_time == kNoTime || stream_time >= source_last_time)) {
    *time_us = stream_time;
    return true;
  }
  // A line without a time (an interpreter's traceback, a C++ abort, NCCL)
  // is written now: the source's latest time dates it better than its
  // stream's last header, which may be a start-up line minutes earlier (an
  // API server silent until its final traceback).
  *time_us = source_last_time;
  return source_last_time != kNoTime;
}

bool SourceParser::Impl::SkipQuietLine(const EnvelopeRecord& rec) {
  const LineTemplate* t = templates.Find(rec.content, *hints);
  if (t == nullptr ||
      (t->level == Level::kUnknown && !ReadsAsWritten(rec.content.substr(t->head.size())))) {
    return false;
  }
  int64_t time_us;
  std::optional<TimeFallback> guessed;
  if (!DateLine(t->has_time ? &t->time : nullptr, rec, t->worker->id, &time_us, &guessed) ||
      !quiet->TakeQuietLine(*t->worker, time_us)) {
    return false;
  }
  // What Process leaves for the line: the times, and no rank for raw lines
  // to follow unless its header named one.
  if (guessed) events.TimeGuessed(*guessed);
  if (t->has_time || rec.has_time) {
    SetTime(t->worker->id, time_us, true, GivesYear(t->has_time ? &t->time : nullptr, rec));
  }
  header_worker = t->names_worker ? t->worker : nullptr;
  return true;
}

void SourceParser::Impl::LearnTemplate(const EnvelopeRecord& rec, const Shape& line) {
  const Header& header = line.header;
  if (header.level != Level::kInfo && header.level != Level::kDebug &&
      header.level != Level::kUnknown) {
    return;
  }
  const std::string_view content = rec.content;
  LineTemplate t;
  t.kind = header.kind;
  t.level = header.level;
  t.worker = line.worker;
  if (header.fixed_size == 0) {
    // A header that varies in its bytes, read again for each line: the line
    // must be what the header was read from.
    if (line.consumed != 0 || header.has_time || header.has_worker ||
        line.rest.data() != content.data() || line.rest.size() != content.size() ||
        !IsPlainAscii(content)) {
      return;
    }
    templates.Learn(std::move(t), content[0]);
    return;
  }
  // The raw bytes of the chain, then the header's fixed bytes as they are.
  size_t chain_end = line.raw_chain_end;
  if (chain_end == std::string_view::npos) {
    chain_end = line.consumed == 0 ? 0 : RawLengthOf(content, line.clean.substr(0, line.consumed));
  }
  const std::string_view rest = line.rest;
  if (chain_end == std::string_view::npos || rest.size() < header.fixed_size ||
      content.size() < chain_end + header.fixed_size) {
    return;
  }
  const std::string_view fixed = content.substr(chain_end, header.fixed_size);
  // The wrappers and the chain are decided by the head's bytes. (A raw
  // prefix hit's line starts with `(`: no wrapper.)
  const bool decided =
      (line.clean.empty() ||
       NoWrapperCanStart(line.clean.substr(0, line.consumed + fixed.size()))) &&
      (line.consumed == 0 ? !MayStartPrefixChain(line.clean) : EndsPrefixChain(rest[0]));
  if (!decided || fixed != rest.substr(0, fixed.size()) || !IsPlainAscii(fixed)) return;
  t.head.assign(content.data(), chain_end + fixed.size());
  t.chain_end = chain_end;
  t.has_time = header.has_time;
  t.time = header.time;
  t.time_begin = header.time_end > 0 ? chain_end + header.time_begin : 0;
  t.time_end = header.time_end > 0 ? chain_end + header.time_end : 0;
  t.names_worker = header.has_worker;
  templates.Learn(std::move(t), content[0]);
}

void SourceParser::Impl::Process(const EnvelopeRecord& rec) {
  // Buffer-first: a line the search vouches holds no atom and no trigger,
  // of a source whose traceback reading is idle, may skip the parse below
  // (parse/line_templates.h), and may become a template.
  const bool vouched = hints != nullptr && quiet != nullptr && hints->covers_quiet_triggers() &&
                       !assembler.HoldsAny() && hints->AtomFree(rec.content);
  if (vouched && SkipQuietLine(rec)) return;
  Shape line;
  line.worker = unprefixed;
  bool learnable = vouched;
  std::string_view rest;
  if (hints == nullptr || !RawPrefixHit(rec.content, &line.worker, &line.consumed, &rest)) {
    CleanFlags flags;
    std::string_view clean = CleanLine(rec.content, &clean_scratch, &flags);
    if (flags.binary) events.LineDropped(DropReason::kBinary);
    if (flags.invalid_utf8) events.LineDropped(DropReason::kInvalidUtf8);
    if (!clean.empty()) {
      const std::string_view unwrapped = StripPasteWrappers(clean);
      const bool wrapped = unwrapped.size() != clean.size();
      clean = unwrapped;
      // A chain starts with `(` or torch's `[rank` (parse/prefix.h); an
      // SGLang or TensorRT-LLM header's `[2026-` or `[TensorRT-LLM]` is none.
      if (MayStartPrefixChain(clean)) {
        ProcessId id;
        std::string_view key;
        line.consumed = prefix_cache.Parse(clean, &id, &key);
        if (line.consumed > 0) {
          line.worker = Lookup(id, key);
          if (hints != nullptr && !wrapped && !flags.binary && !flags.invalid_utf8) {
            KeepRawPrefix(rec.content, clean, line.consumed, line.worker);
          }
        }
      }
      learnable = learnable && !wrapped && !flags.binary && !flags.invalid_utf8;
    }
    line.clean = clean;
    rest = clean.substr(line.consumed);
  } else {
    line.raw_chain_end = rec.content.size() - rest.size();
  }
  WorkerInfo*& worker = line.worker;
  while (!rest.empty() && rest[0] == '\r') rest.remove_prefix(1);  // tqdm after a prefix
  // A bar ends in a trigger (ProgressBarTriggers): bytes of the read buffer
  // the search found none in hold no bar.
  const bool raw_rest = rest.data() >= rec.content.data() &&
                        rest.data() + rest.size() <= rec.content.data() + rec.content.size();
  if (!(raw_rest && vouched)) rest = AfterProgressBar(rest);
  line.rest = rest;

  Header& header = line.header;
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
        line.consumed = n;
      }
      header = inner_header;
      learnable = false;
    }
  }
  if (header.has_worker) {
    worker = Lookup(header.worker, header.worker.name);
    header_worker = worker;
  } else if (line.consumed > 0 || has_header) {
    header_worker = nullptr;
  } else if (header_worker != nullptr) {
    // SGLang/TRT-LLM name the rank only in the header of a record's first
    // line; raw lines after it (a traceback inside one record) are its
    // continuation, so they stay with that rank.
    worker = header_worker;
  }

  if (worker->id >= last_time.size()) last_time.resize(worker->id + 1, kNoTime);
  int64_t time_us;
  std::optional<TimeFallback> guessed;
  time_read = false;
  if (DateLine(header.has_time ? &header.time : nullptr, rec, worker->id, &time_us, &guessed)) {
    if (guessed) events.TimeGuessed(*guessed);
  } else {
    // No time in the source yet. Live, the line is dated by when it is read,
    // so what it starts is decided in wall time like any other line; replay
    // has no such clock and decides it at the end of the input.
    events.TimeGuessed(TimeFallback::kNoTimestamp);
    time_us = options.wall_clock != nullptr ? options.wall_clock() : 0;
    time_read = time_us != 0;
  }
  if (header.has_time || rec.has_time) {
    SetTime(worker->id, time_us, true, GivesYear(header.has_time ? &header.time : nullptr, rec));
  }

  LearnRank(worker, header.location, header.message);

  // How a person reads the message (parse/message_reading.h): a repr of
  // several strings as their text, a dump with escaped newlines as its lines.
  // Only where a failure may be: unleveled lines and WARNING and above.
  if (header.level == Level::kUnknown || header.level >= Level::kWarning) {
    if (SplitEscapedLines(header.message, &escaped_lines)) {
      bool first = true;
      for (std::string& piece : escaped_lines) {
        std::string_view text = piece;
        if (ReadReprStrings(text, &repr_scratch)) text = repr_scratch;
        Deliver(rec, worker, header, has_header && first, text, time_us);
        first = false;
      }
      return;
    }
    if (ReadReprStrings(header.message, &repr_scratch)) {
      Deliver(rec, worker, header, has_header, repr_scratch, time_us);
      return;
    }
  }
  const LineKind kind = Deliver(rec, worker, header, has_header, header.message, time_us);
  if (learnable && has_header && kind == LineKind::kMessage && !assembler.HoldsAny()) {
    LearnTemplate(rec, line);
  }
}

LineKind SourceParser::Impl::Deliver(const EnvelopeRecord& rec, WorkerInfo* worker,
                                     const Header& header, bool has_header,
                                     std::string_view message, int64_t time_us) {
  TracebackInput in;
  in.worker = worker;
  in.message = message;
  in.has_header = has_header;
  in.warning_header = header.kind == HeaderKind::kPythonWarning;
  in.cpp_what = header.kind == HeaderKind::kCppTerminate;
  in.header_text = has_header ? header.text : std::string_view();
  in.level = has_header ? header.level : Level::kUnknown;
  in.line_number = rec.line_number;
  in.offset = rec.offset;
  in.time_us = time_us;
  in.time_read = time_read;
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
  record.time_read = time_read;
  record.location = has_header ? header.location : std::string_view();
  record.message = message;
  record.raw = rec.content;
  if (hints != nullptr && message.data() >= rec.content.data() &&
      message.data() + message.size() <= rec.content.data() + rec.content.size() &&
      hints->AtomFree(rec.content)) {
    record.atom_free_for = hints->rule_set();
  }
  sink.OnRecord(record);
  return record.kind;
}

void SourceParser::Impl::Feed(std::string_view line) {
  ++line_number;
  const uint64_t line_offset = offset;
  offset += line.size() + 1;
  if (line_number <= reread_until) {
    events.LineReread(source_name, line.size() + 1);
  } else {
    events.LineRead(source_name, line.size() + 1);
  }
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
bool SourceParser::HoldsNothing() const {
  return !impl_->envelope.HoldsAny() && !impl_->assembler.HoldsAny();
}

void SourceParser::CountAsRereadUntil(uint64_t line) { impl_->reread_until = line; }

void SourceParser::ForgetTimesBefore(uint64_t line) { impl_->ForgetTimesBefore(line); }

void SourceParser::Seek(uint64_t offset, uint64_t lines_before) {
  impl_->offset = offset;
  impl_->line_number = lines_before;
}

void SourceParser::Tick(int64_t now_us) {
  // A record whose last fragment is overdue goes first: it may open or end a
  // traceback, which the assembler's tick then decides like any other.
  EnvelopeRecord rec;
  while (impl_->envelope.FlushStale(now_us, &rec)) {
    impl_->events.StateEvicted(Evicted::kPartialRecord);
    impl_->Process(rec);
  }
  impl_->assembler.Tick(now_us);
}

void SourceParser::Finish() {
  EnvelopeRecord rec;
  while (impl_->envelope.Flush(&rec)) impl_->Process(rec);
  impl_->assembler.Finish();
}

Envelope SourceParser::envelope() const { return impl_->envelope.envelope(); }

const WorkerTable& SourceParser::workers() const { return impl_->workers; }

const std::string& SourceParser::source_name() const { return impl_->source_name; }

void SourceParser::FastPath::Use(SourceParser& parser, const BufferHints* hints,
                                 QuietLineTaker* taker) {
  parser.impl_->hints = hints;
  parser.impl_->quiet = taker;
}

}  // namespace fingerprintd::parse
