// libFuzzer target: the pipeline and correlator state codecs (the
// pipeline_state blob of a checkpoint). The first byte picks Pipeline or
// Correlator, or a pipeline whose source is named by the input. Invariants:
// a blob that restores saves to a blob that restores into a fresh object and
// saves to the same blob; a rejected blob leaves the object saving what a
// fresh one saves; a source, deployment and label of arbitrary bytes (a
// shipper's pod name) save without throwing and restore onto the source
// added again with the same bytes, stably from the first restore on.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fingerprintd/correlate.h"
#include "fingerprintd/pipeline.h"
#include "fuzz/fuzz_util.h"

namespace {

using fingerprintd::fuzz::Input;

std::shared_ptr<const fingerprintd::rules::RuleSet> Rules() {
  static auto rules = *fingerprintd::rules::LoadEmbeddedRules();
  return rules;
}

class NoSink final : public fingerprintd::correlate::IncidentSink {
 public:
  void OnIncident(fingerprintd::correlate::IncidentChange,
                  const fingerprintd::correlate::Incident&) override {}
};

// `exact_on_error`: a rejected blob leaves the object exactly as it was (the
// correlator; a pipeline may keep the sources the blob named registered).
template <typename Make>
void RoundTrip(const std::string& blob, bool exact_on_error, Make make) {
  auto first = make();
  std::string fresh = first->SaveState();
  if (!first->RestoreState(blob).ok()) {
    if (exact_on_error) FUZZ_CHECK(first->SaveState() == fresh);
    return;
  }
  std::string saved = first->SaveState();
  auto second = make();
  auto restored = second->RestoreState(saved);
  if (!restored.ok()) std::fprintf(stderr, "%s\n", restored.message().c_str());
  FUZZ_CHECK(restored.ok());
  FUZZ_CHECK(second->SaveState() == saved);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t mode = in.Byte();
  std::string blob(in.Rest());
  fingerprintd::NullPipelineEvents events;
  NoSink sink;
  if ((mode & 2) != 0) {
    auto spec = [&] {
      fingerprintd::SourceSpec s;
      s.name = "src " + blob;
      s.deployment = blob;
      s.labels = {{"pod", blob}};
      return s;
    };
    fingerprintd::Pipeline first(Rules(), fingerprintd::Pipeline::Options{}, events, sink);
    const auto id = first.AddSource(spec());
    first.Feed(id, blob, 0);
    const std::string saved = first.SaveState();
    // Restored onto the source added again with the same bytes (a restore
    // settles what a fed pipeline held, so its save is compared from there on).
    fingerprintd::Pipeline second(Rules(), fingerprintd::Pipeline::Options{}, events, sink);
    second.AddSource(spec());
    FUZZ_CHECK(second.RestoreState(saved).ok());
    FUZZ_CHECK(second.source_count() == 1);
    const std::string settled = second.SaveState();
    fingerprintd::Pipeline third(Rules(), fingerprintd::Pipeline::Options{}, events, sink);
    third.AddSource(spec());
    FUZZ_CHECK(third.RestoreState(settled).ok());
    FUZZ_CHECK(third.source_count() == 1);
    FUZZ_CHECK(third.SaveState() == settled);
    return 0;
  }
  const bool correlator = mode & 1;
  if (correlator) {
    RoundTrip(blob, true, [&] {
      return std::make_unique<fingerprintd::correlate::Correlator>(Rules(), events, sink);
    });
  } else {
    RoundTrip(blob, false, [&] {
      return std::make_unique<fingerprintd::Pipeline>(Rules(), fingerprintd::Pipeline::Options{},
                                                      events, sink);
    });
  }
  return 0;
}
