// A failure's signature is the same wherever it happens: the values that
// differ between deployments, nodes, ranks and runs (sizes, GPU numbers,
// paths, model names, addresses, pids) are masked, what makes it this failure
// (its class, type, words and raise site) is kept.
#include "correlate/signature.h"

#include <gtest/gtest.h>

namespace fingerprintd::correlate {
namespace {

TEST(SignatureTest, ValuesThatDifferBetweenDeploymentsAreMasked) {
  EXPECT_EQ(MaskValues("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity "
                       "of 79.19 GiB of which 1.02 GiB is free."),
            "CUDA out of memory. Tried to allocate <size>. GPU <n> has a total capacity of <size> "
            "of which <size> is free.");
  EXPECT_EQ(MaskValues("Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/layout.hpp:60): "
                       "Unknown SF transformation"),
            "Assertion error (<path>:<n>): Unknown SF transformation");
  EXPECT_EQ(MaskValues("No such file: 'Qwen/Qwen3-32B/config.json' at 0x7f3a1c0 (pid 4411)"),
            "No such file: <path> at <hex> (pid <n>)");
  EXPECT_EQ(MaskValues("model meta-llama/Llama-3.1-8B   not found, sha 9f86d081884c7d65"),
            "model <name> not found, sha <hash>");
}

TEST(SignatureTest, TheSameFailureOnTwoDeploymentsHasOneSignature) {
  const std::string a =
      Signature("unknown", "ValueError: invalid literal for int() with base 10: 'gpu3'", "",
                "vllm.config:verify");
  const std::string b =
      Signature("unknown", "ValueError: invalid literal for int() with base 10: 'gpu7'", "",
                "vllm.config:verify");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.rfind("sig-", 0), 0u);
  EXPECT_EQ(a.size(), 4u + 16u);
}

TEST(SignatureTest, TypeWordsPlaceAndClassTellFailuresApart) {
  const std::string base = Signature("unknown", "ValueError: bad shape 3", "", "m:f");
  EXPECT_NE(base, Signature("unknown", "TypeError: bad shape 3", "", "m:f"));
  EXPECT_NE(base, Signature("unknown", "ValueError: bad dtype 3", "", "m:f"));
  EXPECT_NE(base, Signature("unknown", "ValueError: bad shape 3", "", "m:g"));
  EXPECT_NE(base, Signature("config", "ValueError: bad shape 3", "", "m:f"));
}

TEST(SignatureTest, WithoutAnExceptionTheSymptomLineIsMasked) {
  EXPECT_EQ(MaskedCause("distributed", "",
                        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
                        "OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
                        ""),
            "distributed\n\n[Rank <n>] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=<n>, "
            "OpType=ALLREDUCE) ran for <n> milliseconds before timing out.\n");
  EXPECT_EQ(MaskedCause("resource", "torch.OutOfMemoryError: CUDA out of memory. GPU 0", "", "x:y"),
            "resource\ntorch.OutOfMemoryError\nCUDA out of memory. GPU <n>\nx:y");
  EXPECT_EQ(MaskedCause("distributed", "c10::DistBackendError: [Rank 2] timeout", "", ""),
            "distributed\nc10::DistBackendError\n[Rank <n>] timeout\n");
}

}  // namespace
}  // namespace fingerprintd::correlate
