// QuietLines: whole-line skipping for one source of buffer-first replay
// (issue 15). Internal to the Pipeline.
//
// Most lines of a replayed log hold no atom, belong to no open traceback and
// come from a process with nothing pending: the parser and the engine would
// turn them into a record that changes nothing but counters and times. Such a
// line is recognised from its bytes (parse/quiet_line.h): its content starts
// with the raw head of a template (a line of the same process, level and
// second that the parser did process) and the rest is plain ASCII without
// any atom or trigger (the read buffer's search, parse::AtomHints). The
// pipeline then only counts it, moves its event-time floor and ticks as the
// record would have; the parser and the engine never see it.
//
//   Match(line)        -> the template it repeats, and the time its record gets;
//                         a line of a known process in a new second
//                         re-times that process's template (Retime)
//   Skipped(...)       -> remembered for the catch-up
//   MayDefer(line)     -> a line about to be parsed needs no catch-up first
//   Parsed(...)        -> ... and is remembered for the catch-up in turn
//   CatchUp(...)       -> before the parser next parses another line, or ends
//   Learn(line, ...)   -> after a line the parser processed, when it may stand for others
//
// What a skipped line would have changed in the parser is its process's and
// the source's last event time (the time of a later line without one) and
// the rank-bearing header raw lines follow (none after a prefixed or headered
// line, its own after an SGLang header naming a rank). CatchUp() restores
// exactly that: it re-feeds, with counters and
// records muted, one line per process in the place of the last timed line
// skipped for it, in line order, so the last one re-fed stands for the last
// line skipped: the template line (a skippable line itself, so feeding it
// changes nothing else; what it sets, SourceParser::FollowLine sets without
// parsing it), or a copy of the line when its envelope time is its own. A line that is parsed while
// lines are skipped before it reads none of those times when it is dated by its own header or
// envelope, names a known process by a template's raw prefix chain and holds no trigger, so that
// the parser holds nothing after it (MayDefer; an atom is the engine's business); it then joins the
// catch-up as a copy, in its place, so what it set is not undone by lines re-fed for earlier ones.
//
// Most re-feeds would set what the parser already has: within one second
// every process's last time is that second. So QuietLines follows what the
// parser was last fed for each process (its time, when known) and re-feeds a
// line only when that differs, then the newest one when the source's last
// time would not be its time, and the window's last line last when the
// parser's last line or a skipped one may have named a rank in its header
// (SGLang's tags), so that raw lines follow the rank that line leaves. A line
// parsed whose effect on those times is not known (Unknown()) makes the next
// catch-up re-feed everything.
//
// Templates point at WorkerInfo objects of the parser: Forget() drops them
// when a stream is recycled or the parser is replaced.
//
// Threading: single-threaded, owned by the pipeline's source.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprintd/parse.h"
#include "fingerprintd/pipeline_events.h"
#include "parse/atom_hints.h"
#include "parse/quiet_line.h"

namespace fingerprintd::pipeline {

class QuietLines {
 public:
  static constexpr size_t kTemplates = 32;

  struct Template {
    parse::LineShape shape;
    std::string line;  // the physical line the shape was learnt from
    bool cri = false;
    int32_t zone_offset_s = 0;  // CRI: the envelope's zone and local day
    int64_t local_day = 0;
    int64_t time_us = 0;  // header-timed: the time of every line of the shape
    bool guessed = false;
    TimeFallback fallback = TimeFallback::kYearFromClock;  // counted per line when guessed
    size_t probe_at[2] = {0, 0};                           // two 8-byte words of the head,
    uint64_t probe[2] = {0, 0};                            // compared before the whole head
    uint64_t key = 0;  // KeyOf(head) when the head is kKeyBytes or longer (keyed), else 0
    bool keyed = false;
  };

  // A line that may be skipped.
  struct Skip {
    const Template* tmpl = nullptr;
    uint32_t worker = 0;  // tmpl's process (WorkerInfo::id)
    bool timed = false;   // its record has a time of its own (header or envelope)
    int64_t time_us = 0;
  };

  explicit QuietLines(const parse::ParserOptions& options);

  // Whether `line`'s bytes make it a quiet line; the caller still checks that
  // the source holds nothing and that the engine is quiet for the worker.
  bool Match(std::string_view line, Skip* out);
  // `line` (starting at `offset`, with `lines_before` lines before it) was skipped.
  void Skipped(const Skip& skip, std::string_view line, uint64_t offset, uint64_t lines_before);
  // Lines were skipped since the last CatchUp().
  bool behind() const { return behind_; }
  // Whether lines may be skipped, deferred or learnt now: the current read
  // buffer was searched (parse::AtomHints), or lines are behind.
  bool active() const { return behind_ || hints_->searched(); }
  // Brings the parser up to date, in line order: a line standing for a
  // skipped one is a template's, so follow(worker, has_time, time_us, names)
  // (SourceParser::FollowLine) sets what parsing it again would; a copy
  // (an envelope-timed line, a deferred one, a template since replaced) is
  // re-fed whole with feed(line, offset, lines_before). follow's fourth
  // argument: the template's header names the worker (SGLang).
  template <typename Feed, typename Follow>
  void CatchUp(Feed&& feed, Follow&& follow);

  // Whether `line`, about to be parsed, may be parsed before CatchUp(): see
  // above. *worker is the process it names.
  bool MayDefer(std::string_view line, const WorkerInfo** worker);
  // A line MayDefer() allowed was parsed and dated `time_us`.
  void Parsed(std::string_view line, const WorkerInfo* worker, uint64_t offset,
              uint64_t lines_before, int64_t time_us);
  // Whether `line`, about to be parsed, leaves the parser's times alone and
  // names no rank: an unprefixed plain line with a bare shape's header.
  bool LeavesTimes(std::string_view line) const;
  // Such a line was parsed.
  void ParsedWithoutTime() { rank_header_ = false; }
  // Any other line was parsed, with effects on the times not followed.
  void Unknown();

  // Whether a line about to be processed may become a template (cheap).
  bool WantsToLearn(std::string_view line) const;
  // A line Match() gave `skip` for was processed by the parser all the same
  // (the engine was not quiet for its process), in `envelope`, alone and
  // counting `guessed` time fallbacks: the parser has what Learn() would
  // note, and the template stands as it is, so it is not learnt again.
  // False (nothing noted) when the envelope changed or more was counted.
  bool Confirm(const Skip& skip, parse::Envelope envelope, int guessed);
  // After the parser processed `line` into `record` alone, counting `guessed`
  // time fallbacks (the last one `fallback`) and nothing else unusual.
  // Returns true when it became a template (what the parser then has is known).
  bool Learn(std::string_view line, parse::Envelope envelope, const LogRecord& record, int guessed,
             TimeFallback fallback);
  // Forgets every template (their WorkerInfo may describe another process).
  void Forget();

 private:
  static constexpr int64_t kUnknown = INT64_MIN;

  struct Behind {
    bool active = false;
    const Template* tmpl = nullptr;
    uint32_t worker = 0;
    int64_t time_us = 0;
    uint64_t offset = 0, lines_before = 0;
    std::string copy;  // the skipped line itself when its envelope time is its own
    bool use_copy = false;
  };

  bool Content(std::string_view line, std::string_view* content, int64_t* time_us,
               int32_t* zone) const;
  size_t EnvelopeTime(std::string_view line, int64_t* time_us, int32_t* zone) const;
  Behind& TimedFor(const WorkerInfo* worker);
  const Template* LongestChain(std::string_view content, bool bare) const;
  // Entries pointing at `tmpl` (null: at any template), about to change,
  // keep a copy of its line instead.
  void Detach(const Template* tmpl = nullptr);

  // A header-timed template standing for `content` (of a CRI line at
  // `envelope_time` in `zone`, or a plain one) but for its time (another
  // second of the same process): see Retime in the .cc.
  const Template* Retime(std::string_view line, std::string_view content, int64_t envelope_time,
                         int32_t zone);
  size_t ChainRetimeSlot(std::string_view content, bool cri, parse::Header* header,
                         size_t* slot) const;
  static void SetProbes(Template* t);
  // Puts `t` in `slot` (templates_.size(): a new one): in the keyed index,
  // or first in order_.
  void Place(size_t slot, Template&& t);
  // A line's template is looked up by its first kKeyBytes (keyed templates:
  // the prefix chain, mostly, so a template keeps its key from second to
  // second), else among the shorter ones, most recently hit first.
  static constexpr size_t kKeyBytes = 32;
  static constexpr size_t kIndexSlots = 128;  // open addressing, never more than a quarter full
  static uint64_t KeyOf(const char* p);
  const Template* Keyed(std::string_view content) const;
  void Reindex();

  const parse::ParserOptions options_;  // the parser's: its header times
  const parse::AtomHints* hints_;
  const size_t max_line_bytes_;
  parse::Envelope envelope_ = parse::Envelope::kAuto;
  bool source_timed_ = false;  // some line had a time: untimed lines take it, no fallback
  // EnvelopeTime(): the last UTC day seen and its midnight.
  mutable char cri_day_[10] = {};
  mutable bool cri_day_valid_ = false;
  mutable int64_t cri_midnight_us_ = 0;
  // ... and the last minute seen (`YYYY-MM-DDTHH:MM:`) and its first microsecond.
  mutable char cri_minute_[17] = {};
  mutable bool cri_minute_valid_ = false;
  mutable int64_t cri_minute_us_ = 0;
  std::vector<Template> templates_;  // at most kTemplates, never reallocated
  std::vector<uint8_t>
      order_;  // indices of the templates neither bare nor keyed, most recently hit first
  uint8_t index_[kIndexSlots] =
      {};  // keyed templates: index + 1 at KeyOf's slot or after it; 0 free
  size_t next_victim_ = 0;
  std::string scratch_;
  int learn_failures_ = 0;
  mutable int learn_backoff_ = 0;
  // Catch-up: per worker id, the last timed line skipped; and the last untimed one.
  std::vector<Behind> timed_;
  std::vector<uint32_t> timed_ids_;
  std::vector<const Behind*> catch_up_order_;  // CatchUp()'s, in line order
  Behind untimed_;
  bool behind_ = false;
  bool names_worker_ = false;  // a line skipped since the last CatchUp() named its rank
  // What the parser was last fed: each process's time and the source's, and
  // whether the line may have named a rank in its header (SGLang, TRT-LLM).
  std::vector<int64_t> fed_time_;
  int64_t fed_source_time_ = kUnknown;
  bool rank_header_ = true;
  int64_t& FedTime(uint32_t id) {
    if (id >= fed_time_.size()) fed_time_.resize(id + 1, kUnknown);
    return fed_time_[id];
  }
  void Fed(uint32_t id, int64_t time_us) {
    FedTime(id) = time_us;
    fed_source_time_ = time_us;
    rank_header_ = false;
    fed_known_ = true;
  }
  bool fed_known_ = false;  // something above is known: Unknown() has work
};

// In the header: called for every line skipped.
inline QuietLines::Behind& QuietLines::TimedFor(const WorkerInfo* worker) {
  const uint32_t id = worker->id;
  if (id >= timed_.size()) timed_.resize(id + 1);
  Behind& b = timed_[id];
  if (!b.active) timed_ids_.push_back(id);
  b.active = true;
  return b;
}

inline void QuietLines::Skipped(const Skip& skip, std::string_view line, uint64_t offset,
                                uint64_t lines_before) {
  behind_ = true;
  names_worker_ |= skip.tmpl->shape.names_worker;
  Behind& b = skip.timed ? TimedFor(skip.tmpl->shape.worker) : untimed_;
  b.active = true;
  b.tmpl = skip.tmpl;
  b.worker = skip.tmpl->shape.worker->id;
  b.time_us = skip.time_us;
  b.offset = offset;
  b.lines_before = lines_before;
  // A CRI line without a header time is dated by its own envelope.
  b.use_copy = skip.tmpl->cri && !skip.tmpl->shape.header_time;
  if (b.use_copy) b.copy.assign(line.data(), line.size());
}

template <typename Feed, typename Follow>
void QuietLines::CatchUp(Feed&& feed, Follow&& follow) {
  if (!behind_) return;
  behind_ = false;
  // The rank raw lines follow (SourceParser's header_worker) may not be what
  // the window's last line leaves: the parser's last line may have named one,
  // or a skipped one did.
  const bool rank_may_differ = rank_header_ || names_worker_;
  names_worker_ = false;
  const Behind* last_refed = nullptr;
  auto refeed = [&](const Behind& b) {
    if (b.use_copy) {
      feed(std::string_view(b.copy), b.offset, b.lines_before);
    } else {
      follow(*b.tmpl->shape.worker, &b != &untimed_, b.time_us, b.tmpl->shape.names_worker);
    }
    rank_header_ = false;
    last_refed = &b;
  };
  std::vector<const Behind*>& order = catch_up_order_;  // kept: one allocation, not one per call
  order.clear();
  for (uint32_t id : timed_ids_) order.push_back(&timed_[id]);
  std::sort(order.begin(), order.end(),
            [](const Behind* a, const Behind* b) { return a->lines_before < b->lines_before; });
  for (const Behind* b : order) {
    if (FedTime(b->worker) == b->time_us) continue;
    refeed(*b);
    Fed(b->worker, b->time_us);
  }
  if (!order.empty() && fed_source_time_ != order.back()->time_us) {
    refeed(*order.back());
    Fed(order.back()->worker, order.back()->time_us);
  }
  // Then the window's last line is re-fed last: the times are already its
  // (an untimed one is dated by the parser's own times: changes none).
  if (rank_may_differ) {
    const Behind* last = order.empty() ? nullptr : order.back();
    if (untimed_.active && (last == nullptr || untimed_.lines_before > last->lines_before)) {
      last = &untimed_;
    }
    if (last != nullptr && last != last_refed) refeed(*last);
  }
  for (uint32_t id : timed_ids_) timed_[id].active = false;
  timed_ids_.clear();
  untimed_.active = false;
}

}  // namespace fingerprintd::pipeline
