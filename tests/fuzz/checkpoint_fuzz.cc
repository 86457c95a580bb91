// libFuzzer target: the checkpoint codec (checkpoint.json). Invariants: a
// checkpoint that decodes encodes to a text that decodes to the same
// encoding again (a restart of a restart changes nothing); and a checkpoint
// whose source name and pipeline state are arbitrary bytes (a path may hold
// any) encodes without throwing and decodes to the same name. The first
// byte picks which.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "source/checkpoint_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && (data[0] & 0x80) != 0) {
    fingerprintd::source::Checkpoint checkpoint;
    const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    fingerprintd::source::SourceCheckpoint& source = checkpoint.sources.emplace_back();
    source.name = bytes.empty() ? std::string("x") : bytes;
    checkpoint.pipeline_state = bytes;
    const std::string encoded = fingerprintd::source::EncodeCheckpoint(checkpoint);
    auto decoded = fingerprintd::source::DecodeCheckpoint(encoded);
    FUZZ_CHECK(decoded.ok());
    FUZZ_CHECK(decoded->sources.size() == 1 && decoded->sources[0].name == source.name);
    return 0;
  }
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
