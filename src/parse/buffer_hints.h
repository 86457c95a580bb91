// BufferHints: where one read buffer holds an occurrence of the rule set's
// prefilter atoms, so the parser can tell a line without any from its bytes.
//
//   parse::BufferHints hints;
//   SourceParser::FastPath::Use(parser, &hints, taker);  // once
//   hints.Reset(buffer, rule_set.get());     // before the buffer's lines are fed
//   matcher.Search(buffer, hints.mutable_ends(), scratch, hints.mutable_non_plain());
//   hints.Seal();
//   ... parser.Feed(line) for the lines that are views of `buffer` ...
//
// Buffer-first matching (DESIGN.md §7; the fast path inside Pipeline::Feed,
// src/pipeline/buffer_search.h): the pipeline searches each buffer whole
// (rules/buffer_matcher.h) and records the end offset of every atom
// occurrence. A text that lies inside the buffer and has no occurrence ending
// within it holds none of the atoms, so the engine skips its literal scan for
// a message cut from such bytes (LogRecord::atom_free_for). Lines not inside
// the buffer (joined across reads, CRI/Docker partials, unescaped JSON) are
// never vouched for and take the per-line scan.
//
// The same search marks the buffer's bytes that are not printable ASCII,
// one bit per byte, so PlainAscii() answers parse::IsPlainAscii for a line
// (or any text inside the buffer) without reading its bytes again.
//
// Threading: written by the reader, read by the parser, on one thread
// (AtomFree() moves a cursor).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fingerprintd::parse {

class BufferHints {
 public:
  // Starts a buffer searched for the atoms of `rule_set` (a rules::RuleSet*).
  void Reset(std::string_view buffer, const void* rule_set) {
    buffer_ = buffer;
    rule_set_ = rule_set;
    ends_.clear();
    next_ = 0;
    next_lo_ = 0;
    non_plain_marked_ = false;
  }
  // Where the matcher appends the end offset (exclusive) of each occurrence.
  std::vector<size_t>* mutable_ends() { return &ends_; }
  // Where the matcher writes the bitmap of the buffer's non-plain bytes
  // (rules::BufferMatcher::Search: bit i % 64 of word i / 64 for byte i),
  // (buffer size + 63) / 64 words, not zeroed (the matcher writes them all).
  // PlainAscii() vouches for nothing until this was asked for since Reset().
  uint64_t* mutable_non_plain() {
    const size_t words = (buffer_.size() + 63) / 64;
    if (non_plain_.size() < words) non_plain_.resize(words);  // kept across buffers
    non_plain_marked_ = true;
    return non_plain_.data();
  }
  // Sorts the ends once the search is done.
  void Seal() {
    if (!std::is_sorted(ends_.begin(), ends_.end())) std::sort(ends_.begin(), ends_.end());
    next_ = 0;
    next_lo_ = 0;
  }
  // Forgets the buffer: nothing is vouched for until the next Reset.
  void Clear() { Reset({}, nullptr); }

  // True if `text` lies inside the buffer and no atom occurrence lies wholly
  // within it.
  bool AtomFree(std::string_view text) const {
    const char* b = buffer_.data();
    if (b == nullptr || text.data() < b || text.data() + text.size() > b + buffer_.size()) {
      return false;
    }
    const size_t lo = static_cast<size_t>(text.data() - b);
    // An occurrence [from, to) inside [lo, lo + size) has lo < to <= lo + size.
    // The first end past lo: lines are asked in order, so it mostly moves
    // forward from where the last text started (next_ is the first end past
    // next_lo_); a text before that takes a binary search.
    if (lo < next_lo_) {
      next_ = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), lo) - ends_.begin());
    } else {
      while (next_ < ends_.size() && ends_[next_] <= lo) ++next_;
    }
    next_lo_ = lo;
    return next_ == ends_.size() || ends_[next_] > lo + text.size();
  }
  // True if `text` lies inside the buffer and holds no byte the matcher
  // marked in mutable_non_plain(): then exactly when
  // parse::IsPlainAscii(text) is true. False when nothing was searched or
  // mutable_non_plain() was not asked for. Reads a word per 64 bytes of
  // `text`; texts may be asked in any order.
  bool PlainAscii(std::string_view text) const {
    const char* b = buffer_.data();
    if (b == nullptr || !non_plain_marked_ || text.data() < b ||
        text.data() + text.size() > b + buffer_.size()) {
      return false;
    }
    if (text.empty()) return true;
    const size_t lo = static_cast<size_t>(text.data() - b);
    const size_t last = lo + text.size() - 1;
    const uint64_t* words = non_plain_.data();
    uint64_t marked = words[lo / 64] & (~uint64_t{0} << (lo % 64));
    for (size_t w = lo / 64 + 1; w <= last / 64; ++w) {
      if (marked != 0) return false;
      marked = words[w];
    }
    return (marked & (~uint64_t{0} >> (63 - last % 64))) == 0;
  }
  const void* rule_set() const { return rule_set_; }
  // A buffer was searched and is vouched for (Reset() since the last Clear()).
  bool searched() const { return buffer_.data() != nullptr; }

  // Set by the reader when the search also looked for QuietLineTriggers()
  // (parse/line_templates.h): AtomFree() then vouches for those too, and the
  // parser may skip quiet lines whole.
  void set_covers_quiet_triggers(bool covers) { covers_quiet_triggers_ = covers; }
  bool covers_quiet_triggers() const { return covers_quiet_triggers_; }

 private:
  std::string_view buffer_;
  const void* rule_set_ = nullptr;
  bool covers_quiet_triggers_ = false;
  std::vector<size_t> ends_;
  mutable size_t next_ = 0;  // AtomFree(): the first end past next_lo_
  mutable size_t next_lo_ = 0;
  std::vector<uint64_t> non_plain_;  // the first (buffer size + 63) / 64 words
  bool non_plain_marked_ = false;    // mutable_non_plain() since Reset()
};

}  // namespace fingerprintd::parse
