// libFuzzer target: the envelope decoders (CRI, Docker JSON, journald, compose,
// and auto-detection among them). The first byte picks the envelope; the rest
// is lines. Invariants: a record is never longer than the bytes fed so far,
// and Docker's JSON unescaping never grows the text. A clock that moves with
// the envelopes' times and jumps ahead every few lines hands on stale
// partials (FlushStale) between lines.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "parse/docker_json.h"
#include "parse/envelope.h"

using fingerprintd::fuzz::Input;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  uint8_t choice = in.Byte();
  auto envelope = static_cast<fingerprintd::parse::Envelope>(choice % 6);
  fingerprintd::parse::ParserOptions options;
  options.current_year = 2026;
  options.max_line_bytes = 64 + (choice >> 3) * 8;  // small caps reach the joining limits
  fingerprintd::NullPipelineEvents events;
  fingerprintd::parse::EnvelopeDecoder decoder(envelope, options, events);
  fingerprintd::parse::EnvelopeRecord record;
  fingerprintd::JsonObjectScanner docker_scanner;
  fingerprintd::parse::DockerRecord docker;
  uint64_t fed = 0, line_number = 0, offset = 0;
  int64_t latest = 0;
  while (!in.empty()) {
    std::string_view line = in.Line();
    fed += line.size();
    ++line_number;
    if (decoder.Decode(line, line_number, offset, &record)) {
      FUZZ_CHECK(record.content.size() <= fed);
      FUZZ_CHECK(record.line_number >= 1 && record.line_number <= line_number);
      if (record.has_time && record.time_us > latest) latest = record.time_us;
    }
    const int64_t now = latest + static_cast<int64_t>(line_number % 4) * 3'000'000;
    while (decoder.FlushStale(now, &record)) {
      FUZZ_CHECK(record.content.size() <= fed);
      FUZZ_CHECK(record.line_number >= 1 && record.line_number <= line_number);
    }
    offset += line.size() + 1;

    // Unescaping never grows a string (\u0000-style escapes are 6 bytes for
    // at most 3; a pair 12 for 4).
    if (fingerprintd::parse::DecodeDockerJson(line, docker_scanner, &docker)) {
      FUZZ_CHECK(docker.log.size() + docker.stream.size() + docker.time.size() <= line.size());
    }
  }
  while (decoder.Flush(&record)) FUZZ_CHECK(record.content.size() <= fed);
  return 0;
}
