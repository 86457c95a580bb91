// Globs (source/glob.h): `*` within a directory, `**` across them, as the
// kubelet lays out /var/log/pods, and exclude patterns.
#include "source/glob.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/scratch_path.h"

namespace fingerprintd::source {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

TEST(GlobTest, DoubleStarAndTheKubeletLayout) {
  fs::path dir = testing::ScratchPath("glob");
  fs::remove_all(dir);
  fs::create_directories(dir / "pods" / "ns_pod-a_uid1" / "vllm");
  fs::create_directories(dir / "pods" / "ns_pod-b_uid2" / "sidecar" / "deep");
  std::ofstream(dir / "pods" / "ns_pod-a_uid1" / "vllm" / "0.log") << "x";
  std::ofstream(dir / "pods" / "ns_pod-a_uid1" / "vllm" / "0.log.20260104-143410.gz") << "x";
  std::ofstream(dir / "pods" / "ns_pod-b_uid2" / "sidecar" / "deep" / "1.log") << "x";
  std::string root = dir.string();
  EXPECT_THAT(ExpandGlob(root + "/pods/*/vllm/*.log"),
              ElementsAre(root + "/pods/ns_pod-a_uid1/vllm/0.log"));
  EXPECT_THAT(ExpandGlob(root + "/pods/**/*.log"),
              ElementsAre(root + "/pods/ns_pod-a_uid1/vllm/0.log",
                          root + "/pods/ns_pod-b_uid2/sidecar/deep/1.log"));
  EXPECT_TRUE(GlobMatch(root + "/pods/**/*.log", root + "/pods/a/b/c/9.log"));
  EXPECT_TRUE(GlobMatch("/a/**/x.log", "/a/x.log"));
  EXPECT_FALSE(GlobMatch("/a/*/x.log", "/a/b/c/x.log"));
  EXPECT_TRUE(Excluded({"*.gz"}, root + "/pods/ns_pod-a_uid1/vllm/0.log.1.gz"));
  EXPECT_FALSE(Excluded({"*.gz"}, root + "/pods/ns_pod-a_uid1/vllm/0.log"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fingerprintd::source
