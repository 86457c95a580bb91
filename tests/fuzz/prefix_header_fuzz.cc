// libFuzzer target: process prefixes (`(VllmWorker rank=1 pid=42)`, Ray's,
// `[rank3]:`, ...) and log headers (vLLM, uvicorn, Python logging, glog, ...).
// Invariants: ParsePrefixes never consumes more bytes than it was given, and
// every view a parser returns points into the line it parsed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "parse/header.h"
#include "parse/prefix.h"

using fingerprintd::fuzz::Inside;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  fingerprintd::parse::ProcessId id;
  std::string_view key;
  size_t used = fingerprintd::parse::ParsePrefixes(text, &id, &key);
  FUZZ_CHECK(used <= text.size());
  FUZZ_CHECK(Inside(key, text));
  FUZZ_CHECK(Inside(id.name, text));
  FUZZ_CHECK(Inside(id.ip, text));

  fingerprintd::parse::ProcessId parts;
  fingerprintd::parse::ParseParallelParts(text, &parts);
  fingerprintd::parse::ClassifyProcessName(text, &parts);

  std::string_view rest = text.substr(used);
  fingerprintd::parse::Header header;
  if (fingerprintd::parse::ParseHeader(rest, &header)) {
    FUZZ_CHECK(Inside(header.text, rest));
    FUZZ_CHECK(Inside(header.message, rest));
    FUZZ_CHECK(Inside(header.location, rest));
    FUZZ_CHECK(header.text.size() + header.message.size() <= rest.size());
    if (header.has_time) {
      FUZZ_CHECK(header.time.month <= 12 && header.time.day <= 31);
    }
  }
  return 0;
}
