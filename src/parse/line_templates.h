// LineTemplates: the parser's third tier, after PrefixCache and the raw
// prefix (source_parser.cc), for buffer-first replay.
//
// Most lines of a replayed log are INFO messages of a process whose last
// lines looked the same: the same raw prefix chain (ANSI included) and the
// same header but for its time. A template is the head of such a line: the
// raw bytes the parser turned into the prefix chain and the header's fixed
// bytes (Header::fixed_size), with the worker, kind, level and time it gave
// them. A content that starts with a template's head and goes on with
// printable ASCII is parsed into the template's worker, kind, level and time;
// only its location and message differ:
// - CleanLine leaves the head as it left it and the plain rest as it is
//   (RawLengthOf, checked when the template is learnt);
// - no paste wrapper can start with the head (NoWrapperCanStart);
// - the prefix chain ends inside the head, before a byte that cannot extend
//   it, and the header's fixed bytes decide its kind, level, time and rank.
//
// A content alike a head but for the bytes where the header's time sits is
// the same header at another time: ParseHeader, the parser's own call on the
// same bytes, reads it again, and when it gives the template's shape the line
// re-times the template in its place (a new second of the same process).
//
// A template with an empty head stands for unprefixed lines whose header has
// no fixed bytes, no time and no rank (NCCL's `host:pid:tid [dev] NCCL INFO `):
// a line has it when ParseHeader gives its kind and level.
//
// The parser decides whether a line with a template may skip the rest of the
// parse (source_parser.cc, Process and SkipQuietLine): that is where the read
// buffer's search (the triggers below), the traceback state and the sink are
// asked.
//
// Threading: single-threaded, owned by one SourceParser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprintd/log_record.h"
#include "parse/buffer_hints.h"
#include "parse/header.h"

namespace fingerprintd::parse {

// The literals a line must not hold (lowercase, in any case) for the parser
// to skip it: the union of what the traceback reader, rank learning and the
// progress-bar splitter react to. The read buffer is searched for them with
// the rule set's atoms.
const std::vector<std::string>& QuietLineTriggers();

// `atoms` followed by QuietLineTriggers(), for one whole-buffer search.
std::vector<std::string> WithQuietLineTriggers(const std::vector<std::string>& atoms);

struct LineTemplate {
  std::string head;      // raw bytes: the prefix chain, then the header's fixed bytes
  size_t chain_end = 0;  // the chain's raw bytes at the start of `head`
  HeaderKind kind = HeaderKind::kNone;
  Level level = Level::kUnknown;
  bool has_time = false;
  CivilTime time;
  size_t time_begin = 0, time_end = 0;  // where the time sits in `head`
  bool names_worker = false;            // the header names the worker (rank tags)
  WorkerInfo* worker = nullptr;
};

class LineTemplates {
 public:
  static constexpr size_t kCapacity = 32;

  LineTemplates() { entries_.reserve(kCapacity); }

  // The template `content` has (re-timed in place when only its time
  // differs), or null. `hints` answer whether bytes of `content` are plain
  // ASCII (it lies in their read buffer).
  const LineTemplate* Find(std::string_view content, const BufferHints& hints);
  // Keeps `t`, learnt from a line the parser made a record of (whose content
  // starts with `first_byte`): in the place of its process's template of the
  // same shape, else in a free place, else in the oldest one's.
  void Learn(LineTemplate t, char first_byte);
  // Forgets every template (their workers may be recycled).
  void Forget();

 private:
  struct Entry {
    LineTemplate t;
    size_t probe_at[2] = {0, 0};  // two 8-byte words of the head, compared first
    uint64_t probe[2] = {0, 0};
    uint64_t key = 0;  // KeyOf(head) when keyed (see below)
    bool keyed = false;
    char first_class = 0;  // empty head: the class of its line's first byte
  };
  // A head whose first kKeyBytes hold no time is looked up by them (mostly
  // the prefix chain: the key stays from second to second); the others in
  // order_, most recently hit first.
  static constexpr size_t kKeyBytes = 32;
  static constexpr size_t kIndexSlots = 128;  // open addressing, at most a quarter full
  static uint64_t KeyOf(const char* p);
  static char FirstClass(char c);
  static void SetProbes(Entry* e);
  bool Fits(const Entry& e, std::string_view content, const BufferHints& hints) const;
  static bool AlikeButTime(const Entry& e, std::string_view content);
  const LineTemplate* Retime(size_t i, std::string_view content, const BufferHints& hints);
  const LineTemplate* WithoutHead(std::string_view content, const BufferHints& hints) const;
  void Place(size_t slot, Entry e);
  void Reindex();

  std::vector<Entry> entries_;       // at most kCapacity, never reallocated
  std::vector<uint8_t> order_;       // entries neither keyed nor headless, most recently hit first
  uint8_t index_[kIndexSlots] = {};  // keyed entries: index + 1 at KeyOf's slot or after; 0 free
  size_t headless_ = 0;              // entries with an empty head
  size_t next_victim_ = 0;
};

}  // namespace fingerprintd::parse
