// The Alertmanager URL as the push and `config check` read it.
#include "common/http_url.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fingerprintd {
namespace {

using ::testing::HasSubstr;

TEST(HttpUrlTest, HostPortAndPrefixAreTakenApartAndHttpOrHttpsIsAccepted) {
  auto url = ParseHttpUrl("http://am.monitoring:9093/alertmanager/");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_EQ(url->host, "am.monitoring");
  EXPECT_EQ(url->port, "9093");
  EXPECT_EQ(url->prefix, "/alertmanager");
  url = ParseHttpUrl("http://[::1]");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, "80");
  EXPECT_EQ(url->prefix, "");
  EXPECT_FALSE(url->tls);
  EXPECT_EQ(url->ToString(), "http://[::1]:80");
  url = ParseHttpUrl("https://am.monitoring/am");
  ASSERT_TRUE(url.ok()) << url.status().message();
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->port, "443");
  EXPECT_EQ(url->ToString(), "https://am.monitoring:443/am");
  EXPECT_THAT(ParseHttpUrl("am:9093").status().message(),
              HasSubstr("expected http(s)://host[:port][/path]"));
  EXPECT_THAT(ParseHttpUrl("ftp://am:9093").status().message(),
              HasSubstr("expected http(s)://host[:port][/path]"));
  EXPECT_THAT(ParseHttpUrl("http://am:0").status().message(), HasSubstr("port out of range"));
}

}  // namespace
}  // namespace fingerprintd
