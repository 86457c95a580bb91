// Traceback fingerprints are published in incidents and feed incident ids, so
// their values must not change when the code computing them does.
#include <gtest/gtest.h>

#include "fingerprintd/rules.h"

namespace fingerprintd::rules {
namespace {

TEST(FingerprintTest, TracebackFingerprintIsUnchangedBySharingTheHash) {
  ExceptionBlock block;
  block.type = "RuntimeError";
  block.message = "Assertion error (layout.hpp:60): Unknown SF transformation";
  Frame frame;
  frame.file = "/usr/local/lib/python3.12/dist-packages/vllm/utils/deep_gemm.py";
  frame.line = 494;
  frame.function = "transform_sf_into_required_layout";
  block.frames.push_back(frame);
  // The value before the hash moved to common/hash.h.
  EXPECT_EQ(TracebackFingerprint(block), "v1:d8c84660f0f4d3a1");
  block.type = "ray.exceptions.RayTaskError(RuntimeError)";
  EXPECT_EQ(TracebackFingerprint(block), "v1:d8c84660f0f4d3a1");
}

}  // namespace
}  // namespace fingerprintd::rules
