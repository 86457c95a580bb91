// Traceback fingerprints, Sentry-style: the exception type and the ordered
// module:function frames of one exception block. Line numbers, paths outside
// the package, pids and messages are left out, so the same failure on
// different ranks, hosts or patch versions gives the same fingerprint.
#include <cstdint>
#include <cstdio>

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
  // FNV-1a 64: stable across builds and platforms, unlike std::hash.
  uint64_t hash = 1469598103934665603ULL;
  auto mix = [&hash](std::string_view text) {
    for (unsigned char c : text) {
      hash ^= c;
      hash *= 1099511628211ULL;
    }
    hash ^= 0xff;
    hash *= 1099511628211ULL;
  };
  // Ray wraps the type: "ray.exceptions.RayTaskError(RuntimeError)" -> "RuntimeError".
  std::string_view type = block.type;
  size_t open = type.find('(');
  if (open != std::string_view::npos && type.back() == ')') {
    type = type.substr(open + 1, type.size() - open - 2);
  }
  mix(type);
  for (const Frame& frame : block.frames) {
    mix(ModuleOfFile(frame.file));
    mix(frame.function);
  }
  char out[24];
  std::snprintf(out, sizeof(out), "v1:%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace fingerprintd::rules
