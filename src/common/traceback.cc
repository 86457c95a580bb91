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

namespace {

bool IsPassThroughFrame(const Frame& frame) {
  const std::string& f = frame.file;
  if (f.empty() || f[0] == '<') return true;  // "<frozen runpy>", "<string>"
  const bool packages = f.find("-packages/") != std::string::npos;
  // CPython's own library: ".../lib/python3.12/functools.py", not its site-packages.
  if (!packages && f.find("/lib/python3") != std::string::npos) return true;
  // pydantic's validators wrap a config class's own checks
  if (f.find("/pydantic/") != std::string::npos || f.find("/pydantic_core/") != std::string::npos) {
    return true;
  }
  static constexpr std::string_view kTorchWrappers[] = {
      "torch/nn/modules/module.py", "torch/utils/_contextlib.py", "torch/_compile.py",
      "torch/_dynamo/eval_frame.py", "torch/_ops.py"};
  for (std::string_view wrapper : kTorchWrappers) {
    if (f.size() >= wrapper.size() &&
        f.compare(f.size() - wrapper.size(), wrapper.size(), wrapper.data(), wrapper.size()) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

const Frame* ExceptionBlock::RaiseSite() const {
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if (!IsPassThroughFrame(*it)) return &*it;
  }
  return frames.empty() ? nullptr : &frames.back();
}

size_t Traceback::FrameCount() const {
  size_t count = 0;
  for (const ExceptionBlock& block : blocks) count += block.frames.size();
  return count;
}

}  // namespace fingerprintd
