// Secrets read from files as Kubernetes mounts them: trimmed, checked, and
// never quoted in an error.
#include "common/secret_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

namespace fingerprintd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(SecretFileTest, ASecretMountedWithATrailingNewlineIsReadWithoutIt) {
  auto token = ReadSecretFile("k", Write("token", "abc.def\n"), SecretShape::kToken);
  ASSERT_TRUE(token.ok()) << token.status().message();
  EXPECT_EQ(*token, "abc.def");
  auto password =
      ReadSecretFile("k", Write("password", "  correct horse \r\n"), SecretShape::kPassword);
  ASSERT_TRUE(password.ok()) << password.status().message();
  EXPECT_EQ(*password, "correct horse");  // inner spaces are a password's own
}

TEST(SecretFileTest, AMissingEmptyOrMalformedSecretIsAnErrorNamingKeyAndFileNeverTheSecret) {
  EXPECT_THAT(
      ReadSecretFile("a.token_file", "/nonexistent/t", SecretShape::kToken).status().message(),
      HasSubstr("a.token_file: /nonexistent/t: cannot be read: No such file or directory"));
  EXPECT_THAT(ReadSecretFile("k", Write("empty", "\n\n"), SecretShape::kToken).status().message(),
              HasSubstr("nothing in it"));
  const std::string spaced =
      ReadSecretFile("k", Write("spaced", "tok en\n"), SecretShape::kToken).status().message();
  EXPECT_THAT(spaced, HasSubstr("the token holds white space"));
  EXPECT_THAT(spaced, Not(HasSubstr("tok en")));
  EXPECT_THAT(
      ReadSecretFile("k", Write("two", "a\nb\n"), SecretShape::kPassword).status().message(),
      HasSubstr("more than one line"));
  EXPECT_THAT(ReadSecretFile("k", Write("big", std::string(70'000, 'x')), SecretShape::kToken)
                  .status()
                  .message(),
              HasSubstr("larger than 64 KiB"));
}

}  // namespace
}  // namespace fingerprintd
