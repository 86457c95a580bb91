// LineSplitter: bytes -> lines, with a byte cap per line. See source.h.
#include "fingerprintd/source.h"

namespace fingerprintd::source {

void LineSplitter::Append(std::string_view bytes,
                          const std::function<void(std::string_view)>& on_line) {
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    std::string_view piece = nl == std::string_view::npos ? bytes : bytes.substr(0, nl);
    // Common case: the whole line is inside this chunk; hand out a view, no copy.
    bool direct =
        !skipping_ && partial_.empty() && nl != std::string_view::npos && piece.size() <= max_;
    if (direct) {
      on_line(piece);
    } else if (!skipping_) {
      size_t room = max_ - partial_.size();
      if (piece.size() > room) {
        partial_.append(piece.substr(0, room));
        events_.LineDropped(DropReason::kLineTooLong);
        skipping_ = true;  // the rest of this line is dropped
      } else {
        partial_.append(piece);
      }
    }
    if (nl == std::string_view::npos) break;
    if (!direct) {
      on_line(partial_);
      partial_.clear();
      skipping_ = false;
    }
    bytes.remove_prefix(nl + 1);
  }
}

void LineSplitter::Finish(const std::function<void(std::string_view)>& on_line) {
  if (!partial_.empty() || skipping_) on_line(partial_);
  partial_.clear();
  skipping_ = false;
}

}  // namespace fingerprintd::source
