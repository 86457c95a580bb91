// README as a newcomer reads it. "Quick starts": every command block in
// that section is run verbatim, in order, with bash in one working directory
// that holds `build/fingerprintd`, `examples/`, `deploy/` and an archive of
// kubelet pod logs. Blocks that need a cluster, a container engine or root
// are named below and not run; `kubectl logs` prints an example log (there is
// no cluster); every other kubectl command is the real one. Each block must
// succeed and show what the README says it shows. "Reference": the incident
// fields, metric families and config keys it lists are the ones the daemon
// has.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>

#include <csignal>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "deploy/shell.h"
#include "testing/cli_runner.h"
#include "testing/http_client.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The indented code blocks of README's section or subsection `heading`.
std::vector<std::string> CodeBlocks(const std::string& heading) {
  std::istringstream in(run_harness::ReadFile(SourceDir() + "/README.md"));
  std::vector<std::string> blocks;
  bool inside = false, in_block = false;
  const std::string level = heading.substr(0, heading.find(' ') + 1);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#") && (line.starts_with(level) || level.size() > line.find(' ') + 1)) {
      inside = line == heading;
    }
    if (!inside) continue;
    if (line.starts_with("    ")) {
      if (!in_block) blocks.emplace_back();
      blocks.back() += line.substr(4) + "\n";
      in_block = true;
    } else {
      in_block = false;
    }
  }
  return blocks;
}

// A block is not run here when its first command needs one of these (`make image`
// and `make deb` blocks: `make test-image` and `make test-deb` run their commands).
bool NeedsACluster(const std::string& block) {
  for (const char* prefix : {"kubectl apply", "kubectl create", "kubectl wait", "docker ", "sudo ",
                             "systemctl ", "make ", "podman "}) {
    if (block.starts_with(prefix)) return true;
  }
  return false;
}

// What the README promises each block shows (a block is known by a piece of it).
struct Promise {
  const char* block;
  const char* output;
};
const Promise kPromises[] = {
    {"kubectl kustomize deploy/k8s/sidecar\n", "name: fingerprintd"},
    {"config check deploy/k8s/sidecar/fingerprintd.yaml", ": ok, 1 source(s)"},
    {"run --label deployment=default/qwen3-fp8", R"("rule":"deepgemm-unknown-sf-transformation")"},
    {"run --label deployment=default/qwen3-fp8", R"("deployment":"default/qwen3-fp8")"},
    {"kubectl kustomize deploy/k8s/daemonset", "kind: DaemonSet"},
    {"config check deploy/systemd/fingerprintd.yaml", ": ok, 1 source(s)"},
    {"promtool check rules", "SUCCESS"},
    {"promtool test rules", "SUCCESS"},
    {"replay --deployment-from '^examples/", "rule:        deepgemm-unknown-sf-transformation"},
    {"replay --deployment-from '^examples/", "deployment:  moonlight-16b-h100-oom"},
    {"replay --label deployment=qwen3-fp8 qwen3-fp8.log", "deployment:  qwen3-fp8"},
    {"--shard $i/4", "same incidents"},
};

class ReadmeTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    work_ = dir_ / "work";
    fs::create_directories(work_ / "build");
    fs::create_symlink(FINGERPRINTD_BINARY, work_ / "build" / "fingerprintd");
    fs::create_directory_symlink(SourceDir() + "/examples", work_ / "examples");
    fs::create_directory_symlink(SourceDir() + "/deploy", work_ / "deploy");
    // A node's pod logs as `tar -czf pods-2026-10.tar.gz /var/log/pods` stores them.
    ASSERT_EQ(std::system(("tar -czf " + Quoted(work_ / "pods-2026-10.tar.gz") + " -C " +
                           Quoted(SourceDir() + "/tests/golden/cri") + " var/log/pods")
                              .c_str()),
              0);
    // kubectl: the real one, except `logs`, which prints the example log.
    fs::create_directories(dir_ / "bin");
    std::ofstream(dir_ / "bin" / "kubectl")
        << "#!/bin/sh\n"
        << "if [ \"$1\" = logs ]; then exec cat "
        << Quoted(SourceDir() + "/examples/qwen3-fp8-rtx5090/worker.log") << "; fi\n"
        << "PATH=" << Quoted(std::getenv("PATH")) << " exec kubectl \"$@\"\n";
    fs::permissions(dir_ / "bin" / "kubectl", fs::perms::owner_all);
  }

  // Runs `block` with bash in the working directory; stdout and stderr together.
  CommandResult RunBlock(const std::string& block, int index) {
    fs::path script = dir_ / ("block-" + std::to_string(index) + ".sh");
    std::ofstream(script) << "set -euo pipefail\n" << block;
    return Shell("cd " + Quoted(work_) + " && PATH=" + Quoted(dir_ / "bin") + ":\"$PATH\" bash " +
                 Quoted(script));
  }

  fs::path work_;
};

TEST_F(ReadmeTest, EveryQuickStartCommandThatCanRunHereWorksAsWritten) {
  std::vector<std::string> blocks = CodeBlocks("## Quick starts");
  int ran = 0, skipped = 0;
  std::vector<bool> kept(std::size(kPromises), false);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::string& block = blocks[i];
    if (NeedsACluster(block)) {
      ++skipped;
      continue;
    }
    SCOPED_TRACE("README block:\n" + block);
    CommandResult run = RunBlock(block, static_cast<int>(i));
    ++ran;
    EXPECT_EQ(run.exit_code, 0) << run.out;
    for (size_t p = 0; p < std::size(kPromises); ++p) {
      if (block.find(kPromises[p].block) == std::string::npos) continue;
      kept[p] = true;
      EXPECT_THAT(run.out, HasSubstr(kPromises[p].output));
    }
  }
  // A block added, removed or changed past recognition changes these on purpose.
  EXPECT_EQ(ran, 9);
  // kubectl apply: the sidecar, the monitoring rules, the replay Job; make: the image, the package
  EXPECT_EQ(skipped, 5);
  for (size_t p = 0; p < std::size(kPromises); ++p) {
    EXPECT_TRUE(kept[p]) << "no README quick-start block has '" << kPromises[p].block << "'";
  }
}

// The first column's `names` of the table under README's `heading`.
std::set<std::string> TableNames(const std::string& heading) {
  std::istringstream in(run_harness::ReadFile(SourceDir() + "/README.md"));
  std::set<std::string> names;
  bool inside = false;
  static const std::regex kName("`([a-z_]+)`");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#")) inside = line == heading;
    if (!inside || !line.starts_with("| `")) continue;
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    for (std::sregex_iterator it(cell.begin(), cell.end(), kName), end; it != end; ++it) {
      names.insert((*it)[1]);
    }
  }
  return names;
}

TEST_F(ReadmeTest, ConfigReferencePassesConfigCheck) {
  std::vector<std::string> blocks = CodeBlocks("### Config reference");
  ASSERT_EQ(blocks.size(), 1u);
  std::ofstream(dir_ / "reference.yaml") << blocks[0];
  CommandResult check = Fingerprintd("config check " + Quoted(dir_ / "reference.yaml"));
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_THAT(check.out, HasSubstr(": ok, 3 source(s)"));
}

TEST_F(ReadmeTest, IncidentSchemaListsEveryFieldOfAReplayedIncident) {
  const std::string out = (dir_ / "incidents.jsonl").string();
  CommandResult replay = Fingerprintd(
      "replay --quiet --format jsonl " + Quoted(SourceDir() + "/examples/qwen3-fp8-rtx5090"), out);
  ASSERT_EQ(replay.exit_code, 0) << replay.out;
  std::string first = run_harness::ReadFile(out);
  first.resize(first.find('\n'));
  std::set<std::string> fields;
  const run_harness::Json incident = run_harness::Json::parse(first);
  for (const auto& item : incident.items()) fields.insert(item.key());
  // The example's incident is still open at the end: these come once it is
  // closed, and after a recovery (tests/correlate/incident_lifetime_test.cc).
  EXPECT_EQ(fields.count("closed"), 0u);
  fields.insert({"closed", "closed_at", "regressed_from"});
  // What a failure provoked, and a reported consequence whose cause came later
  // (tests/correlate/cause_and_consequences_test.cc).
  fields.insert({"consequences", "folded_into"});
  EXPECT_EQ(TableNames("### Incident schema"), fields);
}

// Every kubelet-path deployment_from the README shows names a pod's workload
// in its namespace: a StatefulSet's ordinal and a Deployment's hashes go, the
// namespace stays, so two namespaces' `llama-70b-0` are two deployments.
TEST_F(ReadmeTest, DeploymentFromExamplesKeepNamespacesAndWorkloadsApart) {
  const std::string readme = run_harness::ReadFile(SourceDir() + "/README.md");
  const std::regex example(R"(deployment_from: '(\^?/var/log/pods/[^']*)')");
  int seen = 0;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), example);
       it != std::sregex_iterator(); ++it) {
    const std::string pattern = (*it)[1];
    SCOPED_TRACE(pattern);
    ++seen;
    std::unique_ptr<re2::RE2> re = config::CompileDeploymentFrom(pattern);
    ASSERT_NE(re, nullptr);
    auto deployment = [&](const std::string& pod) {
      return config::DeploymentForPath({}, re.get(),
                                       "/var/log/pods/" + pod + "_0f3e6a2c/vllm/0.log");
    };
    EXPECT_EQ(deployment("prod_llama-70b-0"), "prod/llama-70b");
    EXPECT_EQ(deployment("staging_llama-70b-0"), "staging/llama-70b");
    EXPECT_EQ(deployment("prod_llama-70b-1"), "prod/llama-70b");
    EXPECT_EQ(deployment("prod_qwen3-fp8-7d9f8c6b5-x2x9k"), "prod/qwen3-fp8");
    EXPECT_EQ(deployment("prod_qwen3-fp8-7d9f8c6b5-b7q4m"), "prod/qwen3-fp8");
    EXPECT_EQ(deployment("inference_ds-v3-0-1"), "inference/ds-v3");
  }
  EXPECT_EQ(seen, 2) << "the quick start's and the config reference's";
}

TEST_F(ReadmeTest, MetricsListIsWhatARunningDaemonServes) {
  fs::create_directories(dir_ / "logs");
  std::ofstream(dir_ / "daemon.yaml")
      << "sources: [{type: file, paths: [\"" << (dir_ / "logs").string()
      << "/*.log\"], start_at: beginning, labels: {deployment: qwen3}}]\n"
      << "http: {listen: 127.0.0.1:0}\nincidents: {path: \"" << (dir_ / "incidents.jsonl").string()
      << "\"}\n";
  fs::copy_file(SourceDir() + "/examples/qwen3-fp8-rtx5090/worker.log", dir_ / "logs" / "0.log");
  run_harness::DaemonProcess daemon({"--config", (dir_ / "daemon.yaml").string()},
                                    dir_ / "daemon.err");
  uint16_t port = 0;
  ASSERT_TRUE(run_harness::WaitFor([&] {
    port = run_harness::HttpPortIn(run_harness::ReadFile(dir_ / "daemon.err"));
    return port != 0 &&
           run_harness::ReadFile(dir_ / "incidents.jsonl").find('\n') != std::string::npos;
  })) << run_harness::ReadFile(dir_ / "daemon.err");
  HttpReply metrics = HttpGet(port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  std::set<std::string> served;
  static const std::regex kHelp("# HELP (fingerprintd_[a-z_]+) ");
  for (std::sregex_iterator it(metrics.body.begin(), metrics.body.end(), kHelp), end; it != end;
       ++it) {
    served.insert((*it)[1]);
  }
  std::set<std::string> listed = TableNames("### Metrics");
  for (const std::string& family : served) EXPECT_EQ(listed.count(family), 1u) << family;
  // A family appears on /metrics once it has a value; the rest must exist in the registry.
  const std::string registry = run_harness::ReadFile(SourceDir() + "/src/sink/metrics.cc");
  for (const std::string& family : listed) {
    EXPECT_THAT(registry, HasSubstr(".Name(\"" + family + "\")")) << family;
  }
  EXPECT_GE(served.size(), 15u);
  EXPECT_EQ(daemon.Kill(SIGTERM), 0);
}

}  // namespace
}  // namespace fingerprintd::testing
