// BufferSearch: the search half of the pipeline's fast path (see
// fingerprintd/pipeline.h, "The fast path is a tier inside Feed"). Private
// to src/pipeline/.
//
// Pipeline::Feed searches each buffer it is given for the rule set's atoms
// and the quiet-line triggers (rules/buffer_matcher.h) before splitting it,
// into BufferHints the parsers read (parse/buffer_hints.h): a line that is a
// view of the buffer and has no occurrence in it holds no atom.
//
//   BufferSearch search(rule_set);   // one per pipeline, on its thread
//   search.Search(buffer);           // before the buffer's lines are parsed
//   ... lines of `buffer` ...
//   search.Clear();                  // before the buffer goes away
//
// The matcher is compiled once per rule set (MatcherFor) and shared by every
// pipeline of the process; each BufferSearch has its own scratch.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "fingerprintd/rules.h"
#include "parse/buffer_hints.h"
#include "rules/buffer_matcher.h"

namespace fingerprintd::pipeline_detail {

class BufferSearch {
 public:
  explicit BufferSearch(const std::shared_ptr<const rules::RuleSet>& rule_set);
  BufferSearch(const BufferSearch&) = delete;
  BufferSearch& operator=(const BufferSearch&) = delete;

  // What the parsers read; null when the rule set has no atoms a search can
  // vouch for (every line then takes the per-line path).
  const parse::BufferHints* hints() const { return matcher_ != nullptr ? &hints_ : nullptr; }
  // Searches a buffer before its lines are parsed (see buffer_search.cc for
  // how a buffer dense with atoms is given up on).
  void Search(std::string_view buffer);
  // Vouches for nothing until the next Search.
  void Clear() { hints_.Clear(); }

 private:
  std::shared_ptr<const rules::BufferMatcher> matcher_;  // null: no search
  const rules::RuleSet* rule_set_;
  std::unique_ptr<rules::BufferMatcher::Scratch> scratch_;
  parse::BufferHints hints_;
  int skip_ = 0;
  bool dense_before_ = false;  // the last buffer searched was dense
};

}  // namespace fingerprintd::pipeline_detail
