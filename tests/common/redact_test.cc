// Secrets as they turn up in inference logs, each masked with its kind, and
// the look-alikes an incident must keep (max_tokens=, "Invalid token", a
// plain URL): the incident still has to say what failed.
#include "common/redact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fingerprintd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::shared_ptr<const Redactor> Defaults() {
  auto redactor = Redactor::Create(Redactor::Defaults());
  EXPECT_TRUE(redactor.ok()) << redactor.status().message();
  return *redactor;
}

struct Case {
  std::string text;
  std::string expected;
  std::string kind;
};

TEST(RedactTest, EachKindOfSecretIsMaskedAndNamed) {
  const std::vector<Case> cases = {
      {"401 Client Error for url with token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
       "401 Client Error for url with token [redacted:hf_token]", "hf_token"},
      {"headers={'Authorization': 'Bearer eyJhbGciOiJIUzI1NiJ9.cGF5bG9hZA.c2ln'}",
       "headers={'Authorization': 'Bearer [redacted:authorization]'}", "authorization"},
      {"curl -H \"authorization: Basic dXNlcjpwYXNzd29yZA==\"",
       "curl -H \"authorization: Basic [redacted:authorization]\"", "authorization"},
      {"requests.get(url, headers={\"Authorization\": \"sk0123456789abcdef\"})",
       "requests.get(url, headers={\"Authorization\": \"[redacted:authorization]\"})",
       "authorization"},
      {"retrying with bearer sk-live-0123456789abcdef", "retrying with bearer [redacted:bearer]",
       "bearer"},
      {"InvalidAccessKeyId: AKIAIOSFODNN7EXAMPLE does not exist",
       "InvalidAccessKeyId: [redacted:aws_access_key_id] does not exist", "aws_access_key_id"},
      {"GET https://b.s3.amazonaws.com/w?X-Amz-Algorithm=AWS4&X-Amz-Signature=abc123def456 failed",
       "GET "
       "https://b.s3.amazonaws.com/w?X-Amz-Algorithm=AWS4&X-Amz-Signature=[redacted:url_signature] "
       "failed",
       "url_signature"},
      {"https://acct.blob.core.windows.net/c/w.bin?sv=2022&sig=Zm9vYmFy%3D",
       "https://acct.blob.core.windows.net/c/w.bin?sv=2022&sig=[redacted:url_signature]",
       "url_signature"},
      {"cannot load https://ops:s3cretPassw0rd@models.example.com/llama",
       "cannot load https://ops:[redacted:url_password]@models.example.com/llama", "url_password"},
      {"redis://default:hunter2hunter2@cache:6379 refused",
       "redis://default:[redacted:url_password]@cache:6379 refused", "url_password"},
      {"vllm serve m --api-key sk-0123456789 --port 8000",
       "vllm serve m --api-key [redacted:secret_argument] --port 8000", "secret_argument"},
      {"launch --hf-token=abcd1234efgh", "launch --hf-token=[redacted:secret_argument]",
       "secret_argument"},
      {"db config {\"password\": \"correct horse\"}",
       "db config {\"password\": \"[redacted:secret_argument]\"}", "secret_argument"},
      {"GET /v1/models?api_key=0123456789abcdef&x=1",
       "GET /v1/models?api_key=[redacted:secret_argument]&x=1", "secret_argument"},
  };
  auto redactor = Defaults();
  for (const Case& c : cases) {
    std::string text = c.text;
    std::map<std::string, uint64_t> counts;
    EXPECT_GE(redactor->Redact(&text, &counts), 1u) << c.text;
    EXPECT_EQ(text, c.expected);
    EXPECT_GE(counts[c.kind], 1u) << c.text;
  }
}

TEST(RedactTest, WhatOnlyLooksLikeASecretIsKept) {
  auto redactor = Defaults();
  for (std::string text : {
           std::string("SamplingParams(max_tokens=16, temperature=0.7)"),
           std::string("ValueError: Invalid token type for the tokenizer"),
           std::string("max_num_batched_tokens=8192, tokenizer='Qwen/Qwen3-30B-A3B-FP8'"),
           std::string("Loading weights from https://huggingface.co/Qwen/Qwen3-30B-A3B-FP8"),
           std::string("RuntimeError: Assertion error (/workspace/.deps/deepgemm-src/csrc/apis/"
                       "layout.hpp:60): Unknown SF transformation"),
           std::string("KeyError: 'model.layers.0.mlp.experts.w2_weight_scale_inv'"),
           std::string("hf_hub_download(repo_id='org/model')"),
       }) {
    const std::string before = text;
    EXPECT_EQ(redactor->Redact(&text), 0u) << before;
    EXPECT_EQ(text, before);
  }
}

TEST(RedactTest, AMaskIsNeverMaskedAgainAndSeveralSecretsInOneLineAreAllMasked) {
  auto redactor = Defaults();
  std::string text =
      "Authorization: Bearer abcdefgh12345678 hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123 "
      "AKIAIOSFODNN7EXAMPLE";
  std::map<std::string, uint64_t> counts;
  EXPECT_EQ(redactor->Redact(&text, &counts), 3u);
  std::string again = text;
  EXPECT_EQ(redactor->Redact(&again), 0u);
  EXPECT_EQ(again, text);
  EXPECT_THAT(text, Not(HasSubstr("abcdefgh12345678")));
}

TEST(RedactTest, APatternFromTheConfigIsUsedAndABadOneNamed) {
  auto redactor = Redactor::Create({{"internal_token", R"(itk_([A-Za-z0-9]{16,}))"}});
  ASSERT_TRUE(redactor.ok());
  std::string text = "auth failed for itk_0123456789abcdefXYZ";
  EXPECT_EQ((*redactor)->Redact(&text), 1u);
  EXPECT_EQ(text, "auth failed for itk_[redacted:internal_token]");
  EXPECT_THAT(Redactor::Create({{"x", "(a)(b)"}}).status().message(),
              HasSubstr("at most one capture group"));
  EXPECT_THAT(Redactor::Create({{"Bad Kind", "a"}}).status().message(), HasSubstr("kind"));
  EXPECT_THAT(Redactor::Create({{"k", "(unclosed"}}).status().message(), HasSubstr("regex"));
}

}  // namespace
}  // namespace fingerprintd
