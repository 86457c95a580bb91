// libFuzzer target: traceback assembly over interleaved workers. Each line's
// first byte picks the worker (of 4), the header flags and the level; the rest
// is the message. Invariants: every traceback emitted is within the frame cap
// and belongs to a worker that was fed, and Finish() leaves nothing held.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "parse/traceback_assembler.h"

namespace {

using fingerprintd::fuzz::Input;

constexpr size_t kMaxFrames = 8;

class CheckingSink final : public fingerprintd::parse::RecordSink {
 public:
  void OnRecord(const fingerprintd::LogRecord&) override {}
  void OnTraceback(const fingerprintd::Traceback& tb) override {
    FUZZ_CHECK(tb.FrameCount() <= kMaxFrames);
    FUZZ_CHECK(tb.worker != nullptr);
    FUZZ_CHECK(tb.worker->id < 4);
    FUZZ_CHECK(tb.first_time_us <= tb.last_time_us);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  fingerprintd::WorkerInfo workers[4];
  for (uint32_t i = 0; i < 4; ++i) {
    workers[i].id = i;
    workers[i].pid = static_cast<int32_t>(100 + i);
    workers[i].name = "Worker_TP" + std::to_string(i);
    workers[i].tp = static_cast<int32_t>(i);
  }
  fingerprintd::parse::ParserOptions options;
  options.max_traceback_frames = kMaxFrames;
  options.max_traceback_bytes = 1024;
  fingerprintd::NullPipelineEvents events;
  CheckingSink sink;
  fingerprintd::parse::TracebackAssembler assembler(7, options, events, sink);
  uint64_t line_number = 0, offset = 0;
  int64_t time_us = 1'000'000;
  while (!in.empty()) {
    uint8_t flags = in.Byte();
    std::string_view message = in.Line();
    fingerprintd::parse::TracebackInput input;
    input.worker = &workers[flags & 3];
    input.has_header = (flags & 4) != 0;
    input.warning_header = (flags & 8) != 0;
    input.header_text = input.has_header ? std::string_view("ERROR 04-25 06:14:37 [core.py:1]")
                                         : std::string_view();
    input.level = static_cast<fingerprintd::Level>((flags >> 4) % 6);
    input.line_number = ++line_number;
    input.offset = offset;
    offset += message.size() + 1;
    time_us += (flags & 0x80) ? 40'000'000 : 1000;  // sometimes past the traceback timeout
    input.time_us = time_us;
    input.message = message;
    assembler.Process(input);
    if (flags == 0xff) assembler.Forget(input.worker);
    if ((flags & 0xc0) == 0xc0) assembler.Tick(time_us);
    fingerprintd::SourcePosition pos{offset, line_number};
    assembler.LowestHeld(&pos);
    FUZZ_CHECK(pos.offset <= offset);
    FUZZ_CHECK(assembler.HoldsAny() == (pos.offset < offset));
  }
  assembler.Finish();
  fingerprintd::SourcePosition pos{offset, line_number};
  assembler.LowestHeld(&pos);
  FUZZ_CHECK(pos.offset == offset);
  return 0;
}
