// Traceback: a Python traceback assembled from the lines of ONE worker stream.
//
// Built by parse::TracebackAssembler (ranks interleave in one file, so there is
// one assembler per WorkerInfo) and handed to RecordSink::OnTraceback. Tracebacks
// are rare next to ordinary lines, so they own their strings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fingerprintd/log_record.h"

namespace fingerprintd {

struct Frame {
  std::string file;  // as printed: "/usr/.../vllm/utils/deep_gemm.py"
  int32_t line = 0;
  std::string function;  // "transform_sf_into_required_layout"
  std::string code;      // first source line under the frame, trimmed ("" if none)
};

// One exception of a chain: its frames (outermost call first, as printed) and
// the exception line that ends it.
struct ExceptionBlock {
  std::vector<Frame> frames;
  std::string type;         // "RuntimeError", "tvm.error.InternalError",
                            // "ray.exceptions.RayTaskError(RuntimeError)"
  std::string message;      // text after "Type: " (may be empty)
  bool has_header = false;  // a "Traceback (most recent call last):" line opened it

  // Where the exception was raised: the innermost frame that is not a
  // pass-through of the interpreter, torch or pydantic (the Python standard
  // library, `<frozen ...>`, torch's module call and no-grad wrappers,
  // pydantic's validators around a config class), so that a
  // `TypeError` from calling a layer with the wrong arguments is placed in
  // the engine or model code that made the call. nullptr without frames.
  const Frame* RaiseSite() const;
};

struct Traceback {
  uint32_t source_id = 0;
  const WorkerInfo* worker = nullptr;
  // Exceptions in printed order. With `raise X from Y` Python prints Y first,
  // so blocks.front() is the innermost cause and blocks.back() the outermost.
  // Ray prints the remote worker's traceback after the RayTaskError line: the
  // assembler keeps it in the same Traceback as a following block.
  std::vector<ExceptionBlock> blocks;
  uint64_t first_line = 0, last_line = 0;  // physical line numbers in the source
  uint64_t first_offset = 0;               // byte offset of the first line
  int64_t first_time_us = 0, last_time_us = 0;
  bool time_read = false;       // last_time_us is a reading time (LogRecord::time_read)
  bool truncated = false;       // frame or byte cap hit; middle frames dropped
  uint64_t dropped_frames = 0;  // how many (the head and the innermost frames are kept)
  bool complete = false;  // ended at an exception line (false: flushed by foreign line/timeout/EOF)

  // The exception that started it all: the first block with an exception
  // line, whose type is not a Ray wrapper; nullptr if none.
  const ExceptionBlock* RootCause() const;
  // Total number of frames over all blocks.
  size_t FrameCount() const;
};

}  // namespace fingerprintd
