// deploy/Dockerfile cannot be built here (no container engine runs in this
// environment), so what would break it is checked instead: its package lists
// against deploy/install-deps.sh and against the libraries the built binary
// really links, its build steps against the Makefile's, and what it copies
// against what CMakeLists.txt reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "deploy/shell.h"
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
    for (const std::string& p : Words((*it)[1])) out.insert(p);
  }
  return out;
}

// The Dockerfile with `\`-continued lines joined.
std::string Dockerfile() {
  std::string text = ReadFile(SourceDir() + "/deploy/Dockerfile");
  return std::regex_replace(text, std::regex(R"(\\\n)"), " ");
}

// The packages of the n-th `apt-get install` (0: build stage, 1: runtime).
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
  EXPECT_TRUE(both.empty()) << "in the build stage and called test-only: " << *both.begin();
  std::set<std::string> named = build;
  named.insert(test_only.begin(), test_only.end());
  EXPECT_EQ(named, all) << "deploy/install-deps.sh and deploy/Dockerfile disagree: a package "
                           "added to one belongs in the other's build list or test-only comment";
}

TEST(DockerfileTest, RuntimePackagesAreExactlyThoseOfTheLibrariesTheBinaryLinks) {
  // dpkg knows a library by the path its package ships, which on a merged-/usr
  // system is either ldd's (/lib/...) or the resolved one (/usr/lib/...).
  const std::string command =
      "for f in $(ldd " + std::string(FINGERPRINTD_BINARY) +
      " | awk '$3 ~ /^\\// {print $3}'); do dpkg-query -S \"$f\" 2>/dev/null ||"
      " dpkg-query -S \"$(readlink -f \"$f\")\"; done | cut -d: -f1 | sort -u";
  CommandResult owners = Shell(command);
  ASSERT_EQ(owners.exit_code, 0) << owners.out;
  std::set<std::string> linked = Words(owners.out);
  // A sanitizer build (make test-sanitize) also links the sanitizers' runtimes;
  // the image is never such a build.
  std::erase_if(linked, [](const std::string& package) {
    return package.starts_with("libasan") || package.starts_with("libubsan") ||
           package.starts_with("libtsan");
  });
  ASSERT_THAT(linked, ::testing::Contains("libre2-9"));
  EXPECT_EQ(AptInstall(1), linked);
}

TEST(DockerfileTest, BuildStepsAreTheMakefilesWithoutTestsAndTheImageRunsAsNonRoot) {
  const std::string docker = Dockerfile();
  // Makefile: cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo; cmake --build.
  std::smatch configure;
  const std::string makefile = ReadFile(SourceDir() + "/Makefile");
  ASSERT_TRUE(std::regex_search(makefile, configure, std::regex(R"(cmake -S \. -B \S+ (.*))")));
  EXPECT_THAT(docker,
              HasSubstr("cmake -S . -B build " + configure[1].str() + " -DBUILD_TESTING=OFF"));
  EXPECT_THAT(docker, HasSubstr("cmake --build build"));
  EXPECT_THAT(docker, HasSubstr("FROM debian:12 AS build"));
  EXPECT_THAT(docker, HasSubstr("FROM debian:12-slim"));
  EXPECT_THAT(docker, HasSubstr("USER 65532:65532"));  // deploy/k8s runAsUser
  EXPECT_THAT(docker, HasSubstr("ENTRYPOINT [\"fingerprintd\"]"));
}

TEST(DockerfileTest, EverySourceDirectoryTheBuildReadsIsCopied) {
  std::string cmake = ReadFile(SourceDir() + "/CMakeLists.txt");
  cmake = cmake.substr(0, cmake.find("if(BUILD_TESTING)"));
  const std::string docker = Dockerfile();
  const std::string ignore = ReadFile(SourceDir() + "/deploy/Dockerfile.dockerignore");
  static const std::regex kRead(R"(\$\{CMAKE_SOURCE_DIR\}/([A-Za-z_.-]+))");
  int read = 0;
  for (std::sregex_iterator it(cmake.begin(), cmake.end(), kRead), end; it != end; ++it, ++read) {
    const std::string name = (*it)[1];
    const bool directory = name.find('.') == std::string::npos;
    SCOPED_TRACE(name);
    EXPECT_THAT(docker, HasSubstr(directory ? "COPY " + name + "/ " + name + "/" : name));
    EXPECT_THAT(ignore, HasSubstr("!" + name + (directory ? "/" : "")));
  }
  EXPECT_GE(read, 5);
}

}  // namespace
}  // namespace fingerprintd::testing
