// SourceParser::FastPath: how the pipeline's fast path (Pipeline::Feed,
// src/pipeline/buffer_search.h) reaches into a parser. Only the pipeline and
// the parser's own oracle tests use it; see fingerprintd/pipeline.h for the
// tier as a whole.
//
//   SourceParser::FastPath::Use(parser, &hints, &taker);  // once, after construction
//   hints.Reset(buffer, ...) ... parser.Feed(line) for the lines of `buffer`
//
// With hints, the lines fed that are views of the buffer the hints describe
// (parse/buffer_hints.h) take the parser's fast tiers: the raw prefix, the
// atom-free mark for the engine and, when `taker` is set, the quiet-line skip
// (parse/line_templates.h). Lines outside that buffer take the per-line path.
#pragma once

#include <cstdint>

#include "fingerprintd/log_record.h"
#include "fingerprintd/parse.h"

namespace fingerprintd::parse {

class BufferHints;

// Takes a quiet line whole: the parser vouches that a line of `worker` dated
// `time_us` is an INFO-like message holding no atom and leaving its
// traceback reading idle. True: nothing is delivered for it; false: the
// parser makes its record and delivers it as usual.
class QuietLineTaker {
 public:
  virtual ~QuietLineTaker() = default;
  virtual bool TakeQuietLine(const WorkerInfo& worker, int64_t time_us) = 0;
};

struct SourceParser::FastPath {
  // `hints` and `taker` (either may be null) must outlive the parser.
  static void Use(SourceParser& parser, const BufferHints* hints, QuietLineTaker* taker);
};

}  // namespace fingerprintd::parse
