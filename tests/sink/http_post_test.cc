// The Alertmanager push's transport pieces that need no peer: the
// Authorization header from its files and the client TLS context from its
// PEM files, with errors that name the key and the file. The handshake itself
// runs against a real Alertmanager (tests/integration/alertmanager_tls_e2e_test.py).
#include "sink/http_post.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

namespace fingerprintd::sink {
namespace {

using ::testing::HasSubstr;

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(AuthorizationValueTest, BasicAuthIsBase64OfUserColonPasswordAndBearerIsTheToken) {
  HttpClientAuth auth;
  EXPECT_EQ(*AuthorizationValue(auth, "am"), "");
  auth.username = "a";
  auth.password_file = Write("pw1", "b\n");  // "a:b": one byte short of a group
  EXPECT_EQ(*AuthorizationValue(auth, "am"), "Basic YTpi");
  auth.password_file = Write("pw2", "bc\n");  // "a:bc": a whole group
  EXPECT_EQ(*AuthorizationValue(auth, "am"), "Basic YTpiYw==");
  auth.password_file = Write("pw3", "open sesame\n");
  EXPECT_EQ(*AuthorizationValue(auth, "am"), "Basic YTpvcGVuIHNlc2FtZQ==");
  auth = {};
  auth.bearer_token_file = Write("bearer", "t0k\n");
  EXPECT_EQ(*AuthorizationValue(auth, "am"), "Bearer t0k");
}

TEST(AuthorizationValueTest, AnUnreadablePasswordFileNamesItsKey) {
  HttpClientAuth auth{"a", "/nonexistent/pw", ""};
  EXPECT_THAT(AuthorizationValue(auth, "alertmanager").status().message(),
              HasSubstr("alertmanager.basic_auth.password_file: /nonexistent/pw: cannot be read"));
}

TEST(ClientTlsContextTest, TheSystemsCasAreTheDefault) {
  EXPECT_TRUE(MakeClientTlsContext(HttpClientTls{}, "am.tls_config").ok());
}

TEST(ClientTlsContextTest, FilesThatAreNotPemOrACertificateWithoutItsKeyAreErrorsNamingTheKey) {
  const std::string junk = Write("junk.pem", "not a certificate\n");
  HttpClientTls tls;
  tls.ca_file = junk;
  EXPECT_THAT(MakeClientTlsContext(tls, "am.tls_config").status().message(),
              HasSubstr("am.tls_config.ca_file: " + junk + ": not PEM certificates"));
  tls = {};
  tls.cert_file = junk;
  EXPECT_THAT(MakeClientTlsContext(tls, "am.tls_config").status().message(),
              HasSubstr("am.tls_config: cert_file and key_file go together"));
  tls.key_file = junk;
  EXPECT_THAT(MakeClientTlsContext(tls, "am.tls_config").status().message(),
              HasSubstr("am.tls_config.cert_file: " + junk + ": not a PEM certificate"));
  tls.key_file = "/nonexistent/tls.key";
  EXPECT_THAT(MakeClientTlsContext(tls, "am.tls_config").status().message(),
              HasSubstr("am.tls_config.key_file: /nonexistent/tls.key: cannot be read"));
}

}  // namespace
}  // namespace fingerprintd::sink
