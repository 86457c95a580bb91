// The `type: file` section (source/source_schemas.h).
#include <re2/re2.h>

#include <algorithm>

#include "source/source_schemas.h"

namespace fingerprintd::source {
namespace {

// A file keeps at least this much allocated under release_read_bytes: a read
// of 8 MiB and room for the writer (source/release_policy.h).
constexpr uint64_t kMinRetainedBytes = 16ull << 20;

// "268435456", "256Mi", "1Gi", "64Ki" (powers of 1024, as Kubernetes writes
// a sizeLimit) -> bytes; false when it is none of these or overflows.
bool ParseByteSize(const std::string& text, uint64_t* out) {
  static const RE2 kSize(R"(([0-9]{1,19})(Ki|Mi|Gi|Ti)?)");
  uint64_t number = 0;
  std::string unit;
  if (!RE2::FullMatch(text, kSize, &number, &unit)) return false;
  int shift = unit.empty() ? 0 : unit == "Ki" ? 10 : unit == "Mi" ? 20 : unit == "Gi" ? 30 : 40;
  if (number > (UINT64_MAX >> shift)) return false;
  *out = number << shift;
  return true;
}

// release_read_bytes / max_retained_bytes; that a checkpoint_dir goes with
// them is checked by the loader, with the root's keys.
void ReadRelease(config::SourceSection& section, config::SourceConfig* out) {
  section.Bool("release_read_bytes", &out->release_read_bytes);
  if (!section.Has("max_retained_bytes")) return;
  if (!out->release_read_bytes) {
    return section.Error("max_retained_bytes", "only with release_read_bytes: true");
  }
  const std::string text = section.Scalar("max_retained_bytes");
  if (!ParseByteSize(text, &out->max_retained_bytes)) {
    section.Error("max_retained_bytes",
                  "expected a size in bytes (e.g. 268435456, 256Mi, 1Gi), got '" + text + "'");
  } else if (out->max_retained_bytes < kMinRetainedBytes) {
    section.Error("max_retained_bytes",
                  "must be at least 16Mi (a read of 8 MiB and room for the writer)");
  }
}

}  // namespace

void ReadFileSourceSection(config::SourceSection& section, config::SourceConfig* out) {
  section.Keys({"type", "paths", "exclude", "ignore_older", "format", "start_at", "labels",
                "deployment_from", "release_read_bytes", "max_retained_bytes"});
  section.StringList("paths", true, &out->paths);
  if (std::find(out->paths.begin(), out->paths.end(), "") != out->paths.end()) {
    section.Error("paths", "empty path");
  }
  section.StringList("exclude", false, &out->exclude);
  section.Duration("ignore_older", &out->ignore_older_us);
  section.Format(&out->format);
  std::string start_at = "end";
  section.String("start_at", false, &start_at);
  if (start_at == "end") {
    out->start_at = config::StartAt::kEnd;
  } else if (start_at == "beginning") {
    out->start_at = config::StartAt::kBeginning;
  } else {
    section.Error("start_at", "expected end or beginning, got '" + start_at + "'");
  }
  section.Labels(&out->labels);
  ReadRelease(section, out);
  section.DeploymentFrom(&out->deployment_from);
}

}  // namespace fingerprintd::source
