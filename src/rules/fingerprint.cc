// Traceback fingerprints, Sentry-style: the exception type and the ordered
// module:function frames of one exception block. Line numbers, paths outside
// the package, pids and messages are left out, so the same failure on
// different ranks, hosts or patch versions gives the same fingerprint.
#include "common/hash.h"
#include "fingerprintd/rules.h"

namespace fingerprintd::rules {

std::string ModuleOfFile(std::string_view file) {
  std::string path(file);
  for (char& c : path) {
    if (c == '\\') c = '/';
  }
  size_t packages = path.rfind("-packages/");  // site-packages/ or dist-packages/
  if (packages != std::string::npos) {
    path = path.substr(packages + 10);
  } else {
    size_t root = std::string::npos;
    for (std::string_view name : {"/vllm/", "/sglang/", "/tensorrt_llm/", "/torch/", "/ray/"}) {
      size_t at = path.rfind(name);
      if (at != std::string::npos && (root == std::string::npos || at > root)) root = at;
    }
    if (root != std::string::npos) {
      path = path.substr(root + 1);
    } else if (size_t slash = path.rfind('/'); slash != std::string::npos) {
      path = path.substr(slash + 1);  // a script outside any package: its name only
    }
  }
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".py") == 0) path.resize(path.size() - 3);
  for (char& c : path) {
    if (c == '/') c = '.';
  }
  return path;
}

std::string TracebackFingerprint(const ExceptionBlock& block) {
  // Parts end in 0xff, not the usual 0x1f: fingerprints (and the incident ids
  // built on them) were published with it, and must stay the same.
  constexpr uint8_t kSeparator = 0xff;
  Fnv1a64Hasher hasher;
  // Ray wraps the type: "ray.exceptions.RayTaskError(RuntimeError)" -> "RuntimeError".
  std::string_view type = block.type;
  size_t open = type.find('(');
  if (open != std::string_view::npos && type.back() == ')') {
    type = type.substr(open + 1, type.size() - open - 2);
  }
  hasher.Add(type, kSeparator);
  for (const Frame& frame : block.frames) {
    hasher.Add(ModuleOfFile(frame.file), kSeparator);
    hasher.Add(frame.function, kSeparator);
  }
  return "v1:" + Hex64(hasher.value());
}

}  // namespace fingerprintd::rules
