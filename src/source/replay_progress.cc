#include "source/replay_progress.h"

#include <algorithm>
#include <cstdio>

namespace fingerprintd::source {

namespace {

template <typename... Args>
std::string Format(const char* format, Args... args) {
  char out[96];
  std::snprintf(out, sizeof(out), format, args...);
  return out;
}

// "1.21 GB", "310 MB", "12 kB".
std::string Size(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1e9) return Format("%.2f GB", b / 1e9);
  if (b >= 1e6) return Format("%.0f MB", b / 1e6);
  return Format("%.0f kB", b / 1e3);
}

// "0:04", "1:02:03".
std::string Clock(double seconds) {
  const auto s = static_cast<unsigned long long>(std::max(seconds, 0.0) + 0.5);
  if (s >= 3600) return Format("%llu:%02llu:%02llu", s / 3600, s / 60 % 60, s % 60);
  return Format("%llu:%02llu", s / 60, s % 60);
}

}  // namespace

std::string ReplayProgressLine(const ReplayStats& done, const ReplayTotals& totals,
                               double elapsed_s, uint64_t incidents) {
  std::string line = "replay: ";
  if (totals.input_bytes > 0) {
    const uint64_t read = std::min(done.input_bytes, totals.input_bytes);
    const double fraction = static_cast<double>(read) / static_cast<double>(totals.input_bytes);
    line += Size(read) + " of " + Size(totals.input_bytes) + Format(" (%.0f%%)", fraction * 100);
  } else {
    line += Size(done.bytes) + " read";
  }
  line += Format(", files %llu of %llu",
                 static_cast<unsigned long long>(std::min(done.files, totals.files)),
                 static_cast<unsigned long long>(totals.files));
  if (elapsed_s > 0)
    line += Format(", %.0f MB/s", static_cast<double>(done.bytes) / 1e6 / elapsed_s);
  line += ", " + Clock(elapsed_s) + " elapsed";
  if (totals.input_bytes > 0 && elapsed_s >= 1 && done.input_bytes > 0 &&
      done.input_bytes < totals.input_bytes) {
    const double rate = static_cast<double>(done.input_bytes) / elapsed_s;
    line +=
        ", ~" + Clock(static_cast<double>(totals.input_bytes - done.input_bytes) / rate) + " left";
  }
  line += Format(", %llu incident%s", static_cast<unsigned long long>(incidents),
                 incidents == 1 ? "" : "s");
  return line;
}

}  // namespace fingerprintd::source
