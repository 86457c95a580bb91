#include "pipeline/quiet_lines.h"

#include <cstdlib>
#include <cstring>

#include "parse/ansi.h"
#include "parse/header.h"
#include "parse/paste_wrappers.h"
#include "parse/time_util.h"

namespace fingerprintd::pipeline {
namespace {

constexpr int64_t kMicrosPerSecond = 1'000'000;
// A CRI header without a year takes the year, of the envelope's and its two
// neighbours, that dates it closest to the envelope time. Candidates lie a
// year apart, so a line whose envelope is within this of the template's
// header time, on the same local day and zone, gets the template's time.
constexpr int64_t kNearestYearMarginUs = 180LL * 86400 * kMicrosPerSecond;
// Learning gives up for a while after this many failures in a row: a log of
// lines that are never templates (no vLLM header) pays little for trying.
constexpr int kLearnFailuresBeforeBackoff = 64;
constexpr int kLearnBackoffLines = 64;
// An SGLang head's time ends here: `[YYYY-MM-DD HH:MM:SS`.
constexpr size_t kSglangTimeEnd = 20;

uint64_t Word(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

// Two SGLang heads (or a head and a line's first bytes) alike but for the
// time: the same rank tags, first word and byte after it.
bool SameSglangHeadButTime(std::string_view head, std::string_view other) {
  return other.size() >= head.size() &&
         std::memcmp(head.data() + kSglangTimeEnd, other.data() + kSglangTimeEnd,
                     head.size() - kSglangTimeEnd) == 0;
}

}  // namespace

QuietLines::QuietLines(const parse::ParserOptions& options)
    : options_(options), hints_(options.atom_hints), max_line_bytes_(options.max_line_bytes) {
  templates_.reserve(kTemplates);
}

// A CRI line the envelope decoder takes whole (`F`, no tags): its content
// and time. Plain: the line.
bool QuietLines::Content(std::string_view line, std::string_view* content, int64_t* time_us,
                         int32_t* zone) const {
  if (envelope_ == parse::Envelope::kPlain) {
    *content = line;
    return true;
  }
  const size_t pos = EnvelopeTime(line, time_us, zone);
  if (pos == 0 || pos + 10 > line.size() || line[pos] != ' ') return false;
  const std::string_view stream = line.substr(pos + 1, 7);
  if ((stream != "stdout " && stream != "stderr ") || line[pos + 8] != 'F' ||
      line[pos + 9] != ' ') {
    return false;
  }
  *content = line.substr(pos + 10);
  return true;
}

// parse::ParseRfc3339 for the common `YYYY-MM-DDTHH:MM:SS[.f]Z` of one day:
// the day's bytes are compared with the last day seen, and the time of day
// added to its midnight, as CivilToUnixMicros adds it (days * 86400 + h *
// 3600 + m * 60 + s, then the microseconds). Anything else takes the full parse.
// A line of the last minute seen (its first 17 bytes, `YYYY-MM-DDTHH:MM:`,
// checked when that minute was) reads only its seconds and fraction.
size_t QuietLines::EnvelopeTime(std::string_view line, int64_t* time_us, int32_t* zone) const {
  auto two = [&](size_t at, int32_t* v) {
    const unsigned a = static_cast<unsigned char>(line[at]) - '0';
    const unsigned b = static_cast<unsigned char>(line[at + 1]) - '0';
    if (a > 9 || b > 9) return false;
    *v = static_cast<int32_t>(a * 10 + b);
    return true;
  };
  // The seconds, fraction and `Z` from byte 17 on: the end of the time, or 0.
  auto seconds = [&](int32_t* sec, int32_t* micros) -> size_t {
    if (!two(17, sec) || *sec > 60) return 0;
    size_t pos = 19;
    if (line[pos] == '.') {
      const size_t n = parse::ParseFraction(line, pos, micros);
      pos = n == 0 ? 0 : pos + n;
    }
    return pos != 0 && pos < line.size() && line[pos] == 'Z' ? pos : 0;
  };
  int32_t h, m, sec, micros = 0;
  if (line.size() > 20 && cri_minute_valid_ &&
      std::memcmp(line.data(), cri_minute_, sizeof(cri_minute_)) == 0) {
    if (const size_t pos = seconds(&sec, &micros); pos != 0) {
      *time_us = cri_minute_us_ + static_cast<int64_t>(sec) * kMicrosPerSecond + micros;
      *zone = 0;
      return pos + 1;
    }
  }
  if (line.size() > 20 && line[10] == 'T' && line[13] == ':' && line[16] == ':' && two(11, &h) &&
      two(14, &m) && h <= 23 && m <= 59) {
    if (const size_t pos = seconds(&sec, &micros); pos != 0) {
      const int64_t of_minute = (static_cast<int64_t>(h) * 3600 + m * 60) * kMicrosPerSecond;
      const int64_t of_day = of_minute + static_cast<int64_t>(sec) * kMicrosPerSecond + micros;
      if (!cri_day_valid_ || std::memcmp(line.data(), cri_day_, 10) != 0) {
        int64_t t;
        int32_t z;
        if (parse::ParseRfc3339(line, &t, &z) == 0) return 0;
        std::memcpy(cri_day_, line.data(), 10);
        cri_day_valid_ = true;
        cri_midnight_us_ = t - of_day;
      }
      std::memcpy(cri_minute_, line.data(), sizeof(cri_minute_));
      cri_minute_valid_ = true;
      cri_minute_us_ = cri_midnight_us_ + of_minute;
      *time_us = cri_midnight_us_ + of_day;
      *zone = 0;
      return pos + 1;
    }
  }
  return parse::ParseRfc3339(line, time_us, zone);
}

bool QuietLines::Match(std::string_view line, Skip* out) {
  if (templates_.empty() || line.size() > max_line_bytes_ || !hints_->covers_quiet_triggers() ||
      !hints_->AtomFree(line)) {
    return false;
  }
  std::string_view content;
  int64_t envelope_time = 0;
  int32_t zone = 0;
  if (!Content(line, &content, &envelope_time, &zone)) return false;
  auto fits = [&](const Template& t) {
    if (t.shape.bare) return false;  // tried last: it parses the header
    const std::string& head = t.shape.head;
    if (content.size() < head.size()) return false;
    if (head.size() >= 8 && (Word(content.data() + t.probe_at[0]) != t.probe[0] ||
                             Word(content.data() + t.probe_at[1]) != t.probe[1])) {
      return false;
    }
    // parse::HasLineShape, its plain-ASCII test answered by the buffer's
    // search (the line lies in the buffer: it is AtomFree).
    return std::memcmp(content.data(), head.data(), head.size()) == 0 &&
           hints_->PlainAscii(content.substr(head.size()));
  };
  // By its key; else the short templates, most recently hit first: the
  // processes that write now.
  const Template* keyed = Keyed(content);
  size_t hit = keyed != nullptr && fits(*keyed) ? static_cast<size_t>(keyed - templates_.data())
                                                : templates_.size();
  for (size_t k = 0; hit == templates_.size() && k < order_.size(); ++k) {
    if (fits(templates_[order_[k]])) {
      hit = order_[k];
      for (size_t j = k; j > 0; --j) order_[j] = order_[j - 1];  // to the front
      order_[0] = static_cast<uint8_t>(hit);
      break;
    }
  }
  if (hit == templates_.size() && !content.empty() && content[0] >= 'a' && content[0] <= 'z') {
    for (size_t i = 0; i < templates_.size(); ++i) {
      if (templates_[i].shape.bare && parse::HasLineShape(content, templates_[i].shape)) {
        hit = i;
        break;
      }
    }
  }
  const Template* found =
      hit < templates_.size() ? &templates_[hit] : Retime(line, content, envelope_time, zone);
  if (found == nullptr) return false;
  const Template& t = *found;
  out->tmpl = &t;
  out->worker = t.shape.worker->id;
  if (t.shape.header_time) {
    if (t.cri &&
        (zone != t.zone_offset_s || parse::LocalDayOf(envelope_time, zone) != t.local_day ||
         std::abs(t.time_us - envelope_time) >= kNearestYearMarginUs)) {
      return false;
    }
    out->timed = true;
    out->time_us = t.time_us;
  } else if (t.cri) {
    out->timed = true;
    out->time_us = envelope_time;
  } else {
    // The record takes its stream's or the source's last time: no later than
    // the floor, so it moves nothing; with no time yet it would count a
    // fallback instead.
    if (!source_timed_) return false;
    out->timed = false;
    out->time_us = 0;
  }
  return true;
}

uint64_t QuietLines::KeyOf(const char* p) {
  // Four words folded by multiplication; the top bits pick the index slot.
  return (Word(p) * 0x9E3779B97F4A7C15ULL) ^ (Word(p + 8) * 0xC2B2AE3D27D4EB4FULL) ^
         (Word(p + 16) * 0x165667B19E3779F9ULL) ^ (Word(p + 24) * 0xD6E8FEB86659FD93ULL);
}

// The keyed template whose key is `content`'s and whose probe words it has
// (two templates of one key differ there: a level, or another second).
const QuietLines::Template* QuietLines::Keyed(std::string_view content) const {
  if (content.size() < kKeyBytes) return nullptr;
  const uint64_t key = KeyOf(content.data());
  for (size_t i = key >> 57; index_[i] != 0; i = (i + 1) % kIndexSlots) {
    const Template& t = templates_[index_[i] - 1];
    if (t.key == key && content.size() >= t.shape.head.size() &&
        Word(content.data() + t.probe_at[0]) == t.probe[0] &&
        Word(content.data() + t.probe_at[1]) == t.probe[1]) {
      return &t;
    }
  }
  return nullptr;
}

void QuietLines::Reindex() {
  std::fill(std::begin(index_), std::end(index_), 0);
  for (size_t n = 0; n < templates_.size(); ++n) {
    if (!templates_[n].keyed) continue;
    size_t i = templates_[n].key >> 57;
    while (index_[i] != 0) i = (i + 1) % kIndexSlots;
    index_[i] = static_cast<uint8_t>(n + 1);
  }
}

// The template whose raw prefix chain is the longest that `content` starts
// with and continues past (bare ones, whose chain is empty, when `bare`).
// The chain's visible end (probe word 0, inside the chain) is compared first.
const QuietLines::Template* QuietLines::LongestChain(std::string_view content, bool bare) const {
  const Template* chain = nullptr;
  for (const Template& t : templates_) {
    const size_t n = t.shape.chain_end;
    // An SGLang header is no chain (and its worker not the unprefixed stream's).
    if ((t.shape.bare && !bare) || t.shape.kind == parse::HeaderKind::kSglang ||
        (chain != nullptr && n <= chain->shape.chain_end) || content.size() <= n) {
      continue;
    }
    if (t.probe_at[0] + 8 <= n && Word(content.data() + t.probe_at[0]) != t.probe[0]) continue;
    if (std::memcmp(content.data(), t.shape.head.data(), n) == 0) chain = &t;
  }
  return chain;
}

bool QuietLines::MayDefer(std::string_view line, const WorkerInfo** worker) {
  if (!behind_ || line.size() > max_line_bytes_ || !hints_->covers_quiet_triggers()) return false;
  const bool cri = envelope_ == parse::Envelope::kCri;
  const bool atom_free = hints_->AtomFree(line);
  if (!atom_free && !cri) return false;  // see below
  std::string_view content;
  int64_t envelope_time = 0;
  int32_t zone = 0;
  if (!Content(line, &content, &envelope_time, &zone)) return false;
  const Template* chain = LongestChain(content, /*bare=*/true);
  if (chain == nullptr) return false;
  // The parser sees the chain and then this text (printable ASCII, so as is):
  // a header that dates the line (or a CRI envelope that does) and names no
  // other process. In CRI an unprefixed NCCL line too (as for bare shapes:
  // a lowercase first byte is no wrapper and no chain).
  const std::string_view rest = content.substr(chain->shape.chain_end);
  parse::Header header;
  if (!parse::IsPlainAscii(rest) || !parse::ParseHeader(rest, &header) || header.has_worker) {
    return false;
  }
  const bool nccl = cri && header.kind == parse::HeaderKind::kNccl && chain->shape.chain_end == 0 &&
                    rest[0] >= 'a' && rest[0] <= 'z';
  if (!nccl &&
      ((header.kind != parse::HeaderKind::kVllm && header.kind != parse::HeaderKind::kUvicorn) ||
       !(header.has_time || cri))) {
    return false;
  }
  // An atom makes the engine act, not the parser: only a trigger would leave
  // the parser holding something. Looking for the triggers again in a line
  // costs more than a plain source's catch-up spares (its NCCL lines, undated,
  // are never deferred); CRI's catch-ups are dearer.
  if (!atom_free && parse::HoldsQuietTrigger(line)) return false;
  *worker = chain->shape.worker;
  return true;
}

void QuietLines::Parsed(std::string_view line, const WorkerInfo* worker, uint64_t offset,
                        uint64_t lines_before, int64_t time_us) {
  Fed(worker->id, time_us);
  Behind& b = TimedFor(worker);
  b.tmpl = nullptr;
  b.worker = worker->id;
  b.time_us = time_us;
  b.offset = offset;
  b.lines_before = lines_before;
  b.use_copy = true;
  b.copy.assign(line.data(), line.size());
}

bool QuietLines::LeavesTimes(std::string_view line) const {
  return envelope_ == parse::Envelope::kPlain && parse::HasBareHeader(line) &&
         parse::AfterProgressBar(line).data() == line.data();
}

void QuietLines::Unknown() {
  if (!fed_known_ && rank_header_) return;
  fed_time_.clear();
  fed_source_time_ = kUnknown;
  rank_header_ = true;
  fed_known_ = false;
}

void QuietLines::Detach(const Template* tmpl) {
  auto detach = [&](Behind& b) {
    if (!b.active || b.use_copy || (tmpl != nullptr && b.tmpl != tmpl)) return;
    b.copy = b.tmpl->line;
    b.use_copy = true;
    b.tmpl = nullptr;
  };
  for (uint32_t id : timed_ids_) detach(timed_[id]);
  detach(untimed_);
}

bool QuietLines::WantsToLearn(std::string_view line) const {
  if (learn_backoff_ > 0) {
    --learn_backoff_;
    return false;
  }
  // A plain line starting with a paste wrapper's first byte ('>', '[' or a
  // digit: TensorRT-LLM's headers too) is never a template
  // (parse::LearnLineShape), and is not tried: no capture, no failure
  // counted. An SGLang header starts with '[' too, and may be one.
  if (envelope_ == parse::Envelope::kPlain && !line.empty() &&
      ((line[0] == '[' && !parse::IsSglangStart(line)) || line[0] == '>' ||
       (line[0] >= '0' && line[0] <= '9'))) {
    return false;
  }
  return hints_->covers_quiet_triggers() && line.size() <= max_line_bytes_ &&
         hints_->AtomFree(line);
}

bool QuietLines::Confirm(const Skip& skip, parse::Envelope envelope, int guessed) {
  if (envelope != envelope_ || guessed > 1) return false;
  learn_failures_ = 0;
  // As Learn() notes a template's line (a timed one dates its process and the source).
  if (skip.timed) {
    source_timed_ = true;
    Fed(skip.worker, skip.time_us);
  } else {
    rank_header_ = false;
  }
  if (skip.tmpl->shape.names_worker) rank_header_ = true;
  return true;
}

bool QuietLines::Learn(std::string_view line, parse::Envelope envelope, const LogRecord& record,
                       int guessed, TimeFallback fallback) {
  auto failed = [&] {
    if (++learn_failures_ >= kLearnFailuresBeforeBackoff) {
      learn_failures_ = 0;
      learn_backoff_ = kLearnBackoffLines;
    }
    return false;
  };
  if (guessed > 1 || (envelope != parse::Envelope::kPlain && envelope != parse::Envelope::kCri)) {
    return failed();
  }
  if (envelope != envelope_) {  // decided (kAuto) after templates were learnt: start over
    Detach();
    templates_.clear();
    order_.clear();
    Reindex();
    envelope_ = envelope;
  }
  Template t;
  std::string_view content;
  int64_t envelope_time = 0;
  int32_t zone = 0;
  if (!Content(line, &content, &envelope_time, &zone) ||
      !parse::LearnLineShape(content, record, &t.shape, &scratch_)) {
    return failed();
  }
  learn_failures_ = 0;
  t.line.assign(line.data(), line.size());
  t.cri = envelope == parse::Envelope::kCri;
  t.zone_offset_s = zone;
  t.local_day = parse::LocalDayOf(envelope_time, zone);
  t.time_us = record.time_us;
  t.guessed = guessed == 1;
  t.fallback = fallback;
  if (t.cri && t.shape.header_time && std::abs(t.time_us - envelope_time) >= kNearestYearMarginUs) {
    return false;
  }
  SetProbes(&t);
  // What the parser has after this line: its time, when the line is dated.
  if (t.shape.header_time || t.cri) {
    source_timed_ = true;
    Fed(t.shape.worker->id, t.time_us);
  } else {
    rank_header_ = false;
  }
  if (t.shape.names_worker) rank_header_ = true;  // its header named the rank
  // The same process's template of the same kind is replaced (its second is
  // over); else a free slot, else round robin. SGLang's head ends in the
  // message's first word: one template per word, its time (bytes 1-19) aside.
  size_t slot = templates_.size();
  for (size_t i = 0; i < templates_.size(); ++i) {
    const parse::LineShape& s = templates_[i].shape;
    if (s.worker == t.shape.worker && s.kind == t.shape.kind && s.level == t.shape.level &&
        (s.kind != parse::HeaderKind::kSglang ||
         (s.head.size() == t.shape.head.size() && SameSglangHeadButTime(s.head, t.shape.head)))) {
      slot = i;
      break;
    }
  }
  if (slot == templates_.size() && templates_.size() == kTemplates) {
    slot = next_victim_;
    next_victim_ = (next_victim_ + 1) % kTemplates;
  }
  Place(slot, std::move(t));
  return true;
}

void QuietLines::Place(size_t slot, Template&& t) {
  t.keyed = !t.shape.bare && t.shape.head.size() >= kKeyBytes;
  t.key = t.keyed ? KeyOf(t.shape.head.data()) : 0;
  // A template re-timed keeps its key (the chain), and its place in the index.
  bool reindex = t.keyed;
  if (slot == templates_.size()) {
    templates_.push_back(std::move(t));
  } else {
    Detach(&templates_[slot]);
    const Template& old = templates_[slot];
    reindex = old.keyed != t.keyed || old.key != t.key;
    templates_[slot] = std::move(t);
  }
  if (reindex) Reindex();
  std::erase(order_, static_cast<uint8_t>(slot));
  const Template& placed = templates_[slot];
  if (!placed.shape.bare && !placed.keyed)
    order_.insert(order_.begin(), static_cast<uint8_t>(slot));
}

void QuietLines::SetProbes(Template* tp) {
  Template& t = *tp;
  const std::string& head = t.shape.head;
  if (head.size() >= 8) {
    // The chain's last visible bytes (`TP1 pid=42)`, before the colour reset
    // and the space every chain ends with) tell one process from another; the
    // head's last ones, the second.
    size_t visible_end = 0;
    for (size_t i = 0; i < t.shape.chain_end;) {
      if (head[i] == '\x1b') {
        i += parse::EscapeSequenceLength(std::string_view(head).substr(i));
        continue;
      }
      if (head[i] != ' ') visible_end = i + 1;
      ++i;
    }
    t.probe_at[0] = visible_end >= 8 ? visible_end - 8 : 0;
    // SGLang: no chain, but the time, `HH:MM:SS`.
    if (t.shape.kind == parse::HeaderKind::kSglang) t.probe_at[0] = kSglangTimeEnd - 8;
    t.probe_at[1] = head.size() - 8;
    for (int i = 0; i < 2; ++i) t.probe[i] = Word(head.data() + t.probe_at[i]);
  }
}

// A line of a known process in a new second would be parsed and learnt
// (thousands of instructions) only to give a template that differs from
// the process's last one in the header's time. Instead: the line's raw
// chain (after a CRI envelope taken whole) is a template's, so CleanLine,
// the paste wrappers and the prefix parse give what they gave it (as in
// parse/quiet_line.h); the same level word follows, the rest is printable
// ASCII, and ParseHeader of that rest, the parser's own call on the same
// bytes, gives a vLLM header of the template's kind and level with a time
// and no worker. Its time is then what SourceParser::Impl::HeaderTime
// gives: plain, the header's year, else GuessedHeaderTime with the
// parser's options, counting the same fallback; CRI, the envelope's local
// year or a neighbour, whichever is nearest the envelope time, with the
// checks a CRI template gets when learnt (the one re-timed counted no
// fallback). The line becomes the template of its second (the old one is
// replaced, as Learn replaces it), without the parser: what the parser was
// last fed is unchanged, and the catch-up re-feeds this very line. An SGLang
// line (parse::IsSglangStart: no wrapper, no chain) instead needs a template
// whose head has the same bytes after the time (rank tags, the message's
// first word and the byte after it): ParseHeader of the line, all printable
// ASCII, then gives the same kind, tags and (no) level, its fixed part
// ending where the template's head does, and the header's own year.
const QuietLines::Template* QuietLines::Retime(std::string_view line, std::string_view content,
                                               int64_t envelope_time, int32_t zone) {
  const bool cri = envelope_ == parse::Envelope::kCri;
  if (!cri && envelope_ != parse::Envelope::kPlain) return nullptr;
  parse::Header header;
  size_t slot = templates_.size(), head_size = 0;
  if (parse::IsSglangStart(content)) {
    // SGLang: no chain, and the paste wrappers leave the line alone
    // (IsSglangStart); the same bytes after the time (rank tags and first
    // word) give the same tags and (no) level.
    if (!hints_->PlainAscii(content) || !parse::ParseHeader(content, &header) ||
        header.kind != parse::HeaderKind::kSglang || header.fixed_size == 0) {
      return nullptr;
    }
    head_size = header.fixed_size;
    for (size_t i = 0; i < templates_.size(); ++i) {
      const Template& t = templates_[i];
      if (t.shape.kind == parse::HeaderKind::kSglang && t.cri == cri &&
          t.shape.head.size() == head_size && SameSglangHeadButTime(t.shape.head, content)) {
        slot = i;
        break;
      }
    }
  } else {
    head_size = ChainRetimeSlot(content, cri, &header, &slot);
  }
  if (slot == templates_.size()) return nullptr;
  Template n = templates_[slot];
  n.shape.head.assign(content.data(), head_size);
  n.line.assign(line.data(), line.size());
  if (cri) {
    // The envelope's year and zone (SourceParser::Impl::HeaderTime), and the
    // checks Match and Learn make of a CRI template.
    if (header.time.year != 0) {
      n.time_us = parse::CivilToUnixMicros(header.time, header.time.year, zone);
    } else {
      int64_t candidates[3];
      parse::NearestYearCandidates(header.time, parse::LocalDayOf(envelope_time, zone), zone,
                                   candidates);
      n.time_us = parse::NearestTo(candidates, envelope_time);
    }
    if (std::abs(n.time_us - envelope_time) >= kNearestYearMarginUs) return nullptr;
    n.zone_offset_s = zone;
    n.local_day = parse::LocalDayOf(envelope_time, zone);
  } else if (header.time.year != 0) {
    n.time_us =
        parse::CivilToUnixMicros(header.time, header.time.year, options_.local_utc_offset_s);
    n.guessed = false;
  } else {
    n.time_us =
        parse::GuessedHeaderTime(options_, header.time, options_.local_utc_offset_s, &n.fallback);
    n.guessed = true;
  }
  SetProbes(&n);
  Place(slot, std::move(n));
  return &templates_[slot];
}

// Retime's vLLM case: the template `content` continues the raw chain of, with
// the same level word, and the head's size (0, *slot unchanged: none).
size_t QuietLines::ChainRetimeSlot(std::string_view content, bool cri, parse::Header* out,
                                   size_t* out_slot) const {
  parse::Header& header = *out;
  const Template* chain = LongestChain(content, /*bare=*/false);
  if (chain == nullptr) return 0;
  const size_t chain_end = chain->shape.chain_end;
  const std::string_view rest = content.substr(chain_end);
  if (rest[0] < 'A' || rest[0] > 'Z' || !hints_->PlainAscii(rest) ||
      !parse::ParseHeader(rest, &header) || header.kind != parse::HeaderKind::kVllm ||
      !header.has_time || header.has_worker || header.fixed_size == 0) {
    return 0;
  }
  size_t slot = templates_.size();
  for (size_t i = 0; i < templates_.size(); ++i) {
    const Template& t = templates_[i];
    if (!t.shape.bare && t.cri == cri && (!cri || !t.guessed) && t.shape.header_time &&
        t.shape.chain_end == chain_end && t.shape.kind == header.kind &&
        t.shape.level == header.level &&
        std::memcmp(t.shape.head.data(), chain->shape.head.data(), chain_end) == 0) {
      slot = i;
      break;
    }
  }
  if (slot == templates_.size()) return 0;
  // The same level word too, byte for byte, so the prefix parse stops where it did.
  const std::string& old_head = templates_[slot].shape.head;
  const size_t word_end = old_head.find(' ', chain_end);
  if (word_end == std::string::npos || word_end >= chain_end + header.fixed_size ||
      std::memcmp(content.data() + chain_end, old_head.data() + chain_end, word_end - chain_end) !=
          0) {
    return 0;
  }
  *out_slot = slot;
  return chain_end + header.fixed_size;
}

void QuietLines::Forget() {
  Detach();
  Unknown();
  templates_.clear();
  order_.clear();
  Reindex();
  next_victim_ = 0;
}

}  // namespace fingerprintd::pipeline
