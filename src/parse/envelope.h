// Envelope decoding: the container/host wrapper around each application line.
//
//   cri       `2026-01-04T14:48:25.512345Z stdout F <content>` (Kubernetes
//             CRI files; `P` fragments are joined per stream until `F`)
//   docker    `{"log":"<content>\n","stream":"stdout","time":"..."}` (json-file;
//             records whose log lacks the trailing \n are joined per stream)
//   journald  `Aug 19 18:34:30 host ident[pid]: <content>` (journalctl short)
//   compose   `service-name  | <content>` (docker compose logs)
//   plain     the line is the content
//
// With Envelope::kAuto the first non-empty lines decide: the first line that
// parses as one of the envelopes fixes it for the source; if none of the
// first kDetectLines lines does, the source is plain. Lines seen before the
// decision are treated as plain. Once fixed, a line that does not parse is
// passed on as plain content and counted as DropReason::kBadEnvelope.
//
// Joined partials are capped at ParserOptions::max_line_bytes; the excess is
// dropped and counted once per record as DropReason::kPartialTooLong. A
// record whose final fragment never comes (a `P` without its `F`, a Docker
// record without its `\n`) is handed on as it is once its first fragment is
// older than ParserOptions::traceback_timeout_us (FlushStale), so it holds
// the checkpoint's safe position back by at most that.
//
// Threading: single-threaded, owned by one SourceParser.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/json_object.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/pipeline_events.h"
#include "parse/docker_json.h"
#include "parse/time_util.h"

namespace fingerprintd::parse {

// How the envelope's time got its year (journald prints none).
enum class EnvelopeYear : uint8_t { kKnown = 0, kFromMtime, kFromClock };

// One complete application line. `content` is valid until the next call.
struct EnvelopeRecord {
  std::string_view content;
  uint64_t line_number = 0;  // first physical line of a joined record
  uint64_t offset = 0;
  bool has_time = false;
  int64_t time_us = 0;
  int32_t zone_offset_s = 0;  // offset of the envelope's own zone (0 for Z)
  EnvelopeYear year = EnvelopeYear::kKnown;
};

class EnvelopeDecoder {
 public:
  static constexpr int kDetectLines = 8;

  EnvelopeDecoder(Envelope configured, const ParserOptions& options, PipelineEvents& events);

  // Decodes one physical line (already capped at max_line_bytes). Returns true
  // with *out filled when it completes a record; false while joining partials.
  bool Decode(std::string_view line, uint64_t line_number, uint64_t offset, EnvelopeRecord* out);

  // End of input: returns the buffered partial records one per call.
  bool Flush(EnvelopeRecord* out);

  // Returns, one per call, a record being joined whose first fragment is
  // dated before now_us - traceback_timeout_us (event time): it is handed on
  // unfinished, and a later fragment of its stream starts a new record. A
  // record without an envelope time (a Docker record without "time") is
  // dated by the first call that sees it.
  bool FlushStale(int64_t now_us, EnvelopeRecord* out);

  // The configured envelope, or the detected one; kAuto while undecided.
  Envelope envelope() const { return envelope_; }
  // Lowers *pos to the first fragment of a record still being joined.
  void LowestHeld(SourcePosition* pos) const {
    for (const Partial& p : partials_) {
      if (p.active) pos->LowerTo({p.head.offset, p.head.line_number - 1});
    }
  }
  bool HoldsAny() const { return partials_[0].active || partials_[1].active; }

 private:
  // A record being joined from fragments of one stream (stdout / stderr).
  struct Partial {
    std::string text;
    bool active = false;
    bool over_cap = false;
    bool dated = false;  // head.has_time, or dated by FlushStale
    int64_t since_us = 0;
    EnvelopeRecord head;  // line number, offset and time of the first fragment
  };

  // Hands on partials_[stream] as it is.
  void Emit(int stream, EnvelopeRecord* out);

  bool DecodeAs(Envelope envelope, std::string_view line, EnvelopeRecord* out, bool* complete);
  bool DecodeCri(std::string_view line, EnvelopeRecord* out, bool* complete);
  bool DecodeDocker(std::string_view line, EnvelopeRecord* out, bool* complete);
  bool DecodeJournald(std::string_view line, EnvelopeRecord* out);
  bool DecodeCompose(std::string_view line, EnvelopeRecord* out);
  // Adds a fragment to the stream's partial; returns true with *out = the
  // joined record when `last` ends it.
  bool Join(int stream, std::string_view fragment, bool last, EnvelopeRecord* out);

  const ParserOptions& options_;
  PipelineEvents& events_;
  Envelope envelope_;
  int undecided_lines_ = 0;
  Partial partials_[2];
  int emitted_partial_ = -1;  // cleared at the start of the next call
  JsonObjectScanner json_;    // Docker records
  DockerRecord docker_;
  Rfc3339Cache cri_time_;  // CRI lines' times
};

}  // namespace fingerprintd::parse
