// libFuzzer target: arbitrary bytes through the whole pipeline (envelope
// detection, prefixes, headers, traceback assembly, the embedded rule pack,
// the correlator and the JSON renderer). Bad input must never crash, hang or
// trip a sanitizer. Build and run with `make fuzz` (clang; not part of CI).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "fingerprintd/correlate.h"
#include "fingerprintd/source.h"

namespace {

class RenderEverything final : public fingerprintd::correlate::IncidentSink {
 public:
  void OnIncident(fingerprintd::correlate::IncidentChange,
                  const fingerprintd::correlate::Incident& incident) override {
    size_ += fingerprintd::correlate::IncidentToJson(incident).size();
    size_ += fingerprintd::correlate::IncidentToText(incident).size();
  }
  size_t size_ = 0;
};

std::shared_ptr<const fingerprintd::rules::RuleSet> Rules() {
  static auto rules = *fingerprintd::rules::LoadEmbeddedRules();
  return rules;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fingerprintd::parse::ParserOptions options;
  options.current_year = 2026;
  // Small caps so that the fuzzer reaches the truncation paths.
  options.max_line_bytes = 256;
  options.max_traceback_frames = 8;
  options.max_traceback_bytes = 1024;
  fingerprintd::NullPipelineEvents events;
  RenderEverything sink;
  fingerprintd::source::ReplayText(text, "fuzz.log", "fuzz", options, Rules(), events, sink);
  return 0;
}
