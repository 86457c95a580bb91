// deploy/Dockerfile, checked without a container engine (`make test`): its
// build packages against deploy/install-deps.sh, its package stage's steps
// against the Makefile's `make deb`, its runtime stage installing that package
// (the one `make image` puts in the stage's place), and what it copies against
// what the CMake files read. The image is built and run for real by `make
// image` / `make test-image` (tests/deploy/image_test.py).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testing/cli_runner.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

using run_harness::ReadFile;
using ::testing::HasSubstr;

std::set<std::string> Words(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string word; in >> word;) out.insert(word);
  return out;
}

std::string WithoutComments(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += line.substr(0, line.find('#')) + "\n";
  return out;
}

// install-deps.sh: `PACKAGES=( ... )` and any `PACKAGES+=(...)`.
std::set<std::string> InstallDepsPackages() {
  const std::string script = WithoutComments(ReadFile(SourceDir() + "/deploy/install-deps.sh"));
  std::set<std::string> out;
  static const std::regex kList(R"(PACKAGES\+?=\(([^)]*)\))");
  for (std::sregex_iterator it(script.begin(), script.end(), kList), end; it != end; ++it) {
    // `PACKAGES+=("${GROUP[@]}")` adds an optional group of host tools (podman,
    // lintian), which no stage of the image installs.
    for (const std::string& p : Words((*it)[1])) {
      if (!p.starts_with("\"$")) out.insert(p);
    }
  }
  return out;
}

// The Dockerfile with `\`-continued lines joined.
std::string Dockerfile() {
  std::string text = ReadFile(SourceDir() + "/deploy/Dockerfile");
  return std::regex_replace(text, std::regex(R"(\\\n)"), " ");
}

// The packages of the n-th `apt-get install` (0: package stage, 1: runtime).
std::set<std::string> AptInstall(int n) {
  const std::string text = Dockerfile();
  static const std::regex kInstall(R"(apt-get install -y --no-install-recommends ([^&]*)&&)");
  auto it = std::sregex_iterator(text.begin(), text.end(), kInstall);
  for (int i = 0; i < n && it != std::sregex_iterator(); ++i) ++it;
  return it == std::sregex_iterator() ? std::set<std::string>{} : Words((*it)[1]);
}

// The "# Test-only (...): a b c" comment, continued over comment lines.
std::set<std::string> TestOnly() {
  std::istringstream in(ReadFile(SourceDir() + "/deploy/Dockerfile"));
  std::string words;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# Test-only")) {
      inside = true;
      words += line.substr(line.find("):") + 2);
    } else if (inside && line.starts_with("# ")) {
      words += " " + line.substr(2);
    } else {
      inside = false;
    }
  }
  return Words(words);
}

TEST(DockerfileTest, BuildPackagesAreInstallDepsListWithoutTheTestOnlyOnes) {
  std::set<std::string> build = AptInstall(0), test_only = TestOnly(), all = InstallDepsPackages();
  ASSERT_FALSE(build.empty());
  ASSERT_FALSE(test_only.empty());
  ASSERT_THAT(all, ::testing::Contains("libre2-dev"));
  std::set<std::string> both;
  std::set_intersection(build.begin(), build.end(), test_only.begin(), test_only.end(),
                        std::inserter(both, both.end()));
  EXPECT_TRUE(both.empty()) << "in the package stage and called test-only: " << *both.begin();
  std::set<std::string> named = build;
  named.insert(test_only.begin(), test_only.end());
  EXPECT_EQ(named, all) << "deploy/install-deps.sh and deploy/Dockerfile disagree: a package "
                           "added to one belongs in the other's build list or test-only comment";
}

// The runtime stage's libraries are those dpkg-shlibdeps found the binary links
// (cmake/Package.cmake): it installs the package, not a list of its own.
TEST(DockerfileTest, TheRuntimeStageInstallsOnlyThePackageThePackageStageMade) {
  EXPECT_EQ(AptInstall(1), std::set<std::string>{"/tmp/fingerprintd.deb"});
  EXPECT_THAT(Dockerfile(),
              HasSubstr("COPY --from=package /fingerprintd.deb /tmp/fingerprintd.deb"));
}

// `make image` compiles nothing: the Makefile hands `make deb`'s package to
// deploy/image/build.sh, which gives it as the build context named after the
// stage the runtime copies from (the engine then skips that stage).
TEST(DockerfileTest, MakeImageReplacesThePackageStageWithMakeDebsPackage) {
  const std::string makefile = ReadFile(SourceDir() + "/Makefile");
  EXPECT_THAT(makefile, HasSubstr("\nimage: deb\n"));
  EXPECT_THAT(makefile, HasSubstr("deploy/image/build.sh $(IMAGE) "
                                  "$(DEB_BUILD)/fingerprintd_$(VERSION)_*.deb"));
  const std::string build = ReadFile(SourceDir() + "/deploy/image/build.sh");
  EXPECT_THAT(build, HasSubstr("cp \"$package\" \"$context/fingerprintd.deb\""));
  EXPECT_THAT(build, HasSubstr("--build-context \"package=$context\""));
  EXPECT_THAT(Dockerfile(), HasSubstr("FROM debian:12 AS package"));
}

TEST(DockerfileTest, BuildStepsAreMakeDebsAndTheImageRunsAsNonRoot) {
  const std::string docker = Dockerfile();
  // Makefile: cmake -S . -B $(DEB_BUILD) <flags>; cmake --build; cpack -G DEB.
  std::smatch configure;
  const std::string makefile = ReadFile(SourceDir() + "/Makefile");
  ASSERT_TRUE(
      std::regex_search(makefile, configure, std::regex(R"(cmake -S \. -B \$\(DEB_BUILD\) (.*))")));
  std::smatch docker_configure;
  ASSERT_TRUE(std::regex_search(docker, docker_configure,
                                std::regex(R"(cmake -S \. -B build ([^&]*?) *&&)")));
  auto words = [](const std::string& text) {
    return std::regex_replace(text, std::regex(R"(\s+)"), " ");
  };
  EXPECT_EQ(words(docker_configure[1].str()), words(configure[1].str()));
  EXPECT_THAT(configure[1].str(), HasSubstr("-DBUILD_TESTING=OFF"));
  EXPECT_THAT(docker, HasSubstr("cmake --build build"));
  EXPECT_THAT(makefile, HasSubstr("cpack -G DEB"));
  EXPECT_THAT(docker, HasSubstr("cpack -G DEB"));
  EXPECT_THAT(docker, HasSubstr("FROM debian:12 AS package"));
  EXPECT_THAT(docker, HasSubstr("FROM debian:12-slim"));
  EXPECT_THAT(docker, HasSubstr("USER 65532:65532"));  // deploy/k8s runAsUser
  EXPECT_THAT(docker, HasSubstr("ENTRYPOINT [\"fingerprintd\"]"));
}

TEST(DockerfileTest, EveryFileTheBuildReadsIsCopied) {
  std::string cmake = ReadFile(SourceDir() + "/CMakeLists.txt");
  cmake = cmake.substr(0, cmake.find("if(BUILD_TESTING)"));
  cmake += ReadFile(SourceDir() + "/cmake/Package.cmake");
  // The sources of the Dockerfile's COPY lines (not --from) and the
  // .dockerignore's `!` lines: what reaches the build stage.
  std::vector<std::string> copied, kept;
  std::istringstream docker(ReadFile(SourceDir() + "/deploy/Dockerfile"));
  for (std::string line; std::getline(docker, line);) {
    if (!line.starts_with("COPY ") || line.starts_with("COPY --")) continue;
    std::vector<std::string> words;
    std::istringstream in(line.substr(5));
    for (std::string word; in >> word;) words.push_back(word);
    copied.insert(copied.end(), words.begin(), words.end() - 1);
  }
  std::istringstream ignore(ReadFile(SourceDir() + "/deploy/Dockerfile.dockerignore"));
  for (std::string line; std::getline(ignore, line);) {
    if (line.starts_with("!")) kept.push_back(line.substr(1));
  }
  auto covered = [](const std::string& path, const std::vector<std::string>& roots) {
    return std::any_of(roots.begin(), roots.end(), [&](const std::string& root) {
      return path == root || (root.ends_with("/") && path.starts_with(root));
    });
  };
  static const std::regex kRead(R"(\$\{CMAKE_SOURCE_DIR\}/([A-Za-z_./-]+))");
  int read = 0;
  for (std::sregex_iterator it(cmake.begin(), cmake.end(), kRead), end; it != end; ++it, ++read) {
    std::string path = (*it)[1];
    if (path.find('.') == std::string::npos && !path.ends_with("/")) path += "/";
    SCOPED_TRACE(path);
    EXPECT_TRUE(covered(path, copied)) << "not copied by a COPY line of deploy/Dockerfile";
    EXPECT_TRUE(covered(path, kept)) << "left out by deploy/Dockerfile.dockerignore";
  }
  EXPECT_GE(read, 8);
}

}  // namespace
}  // namespace fingerprintd::testing
