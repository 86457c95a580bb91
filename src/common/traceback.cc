// Queries over an assembled Traceback (fingerprintd/traceback.h).
#include "fingerprintd/traceback.h"

#include <string_view>

namespace fingerprintd {
namespace {

// Ray re-raises a remote failure as RayTaskError(Inner) / RayActorError; the
// wrapper names the transport, not the cause, so the root cause skips it.
bool IsRayWrapperType(std::string_view type) {
  return type.find("RayTaskError") != std::string_view::npos ||
         type.find("RayActorError") != std::string_view::npos;
}

}  // namespace

const ExceptionBlock* Traceback::RootCause() const {
  for (const ExceptionBlock& block : blocks) {
    if (!block.type.empty() && !IsRayWrapperType(block.type)) return &block;
  }
  return nullptr;
}

size_t Traceback::FrameCount() const {
  size_t count = 0;
  for (const ExceptionBlock& block : blocks) count += block.frames.size();
  return count;
}

}  // namespace fingerprintd
