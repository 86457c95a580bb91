// libFuzzer target: the checkpoint reader (checkpoint.json). Invariant: a
// checkpoint that decodes encodes to a text that decodes to the same
// encoding again (a restart of a restart changes nothing).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "source/checkpoint_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto decoded = fingerprintd::source::DecodeCheckpoint(text);
  if (!decoded.ok()) {
    FUZZ_CHECK(!decoded.status().message().empty());
    return 0;
  }
  std::string encoded = fingerprintd::source::EncodeCheckpoint(*decoded);
  auto again = fingerprintd::source::DecodeCheckpoint(encoded);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(fingerprintd::source::EncodeCheckpoint(*again) == encoded);
  FUZZ_CHECK(again->sources.size() == decoded->sources.size());
  return 0;
}
