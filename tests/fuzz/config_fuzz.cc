// libFuzzer target: the daemon's config loader (strict YAML, durations, sizes,
// listen addresses, globs, deployment_from regexes). Invariant: parsing is
// deterministic and every error names the file it came from.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "fuzz/fuzz_util.h"
#include "source/source_schemas.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto first = fingerprintd::config::ParseConfig("fuzz.yaml", text,
                                                 fingerprintd::source::BuiltInSourceTypes());
  auto second = fingerprintd::config::ParseConfig("fuzz.yaml", text,
                                                  fingerprintd::source::BuiltInSourceTypes());
  FUZZ_CHECK(first.ok() == second.ok());
  if (!first.ok()) {
    FUZZ_CHECK(first.status().message() == second.status().message());
    FUZZ_CHECK(first.status().message().find("fuzz.yaml") != std::string::npos);
  } else {
    FUZZ_CHECK(first->sources.size() == second->sources.size());
  }
  return 0;
}
