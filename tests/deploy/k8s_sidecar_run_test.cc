// The sidecar of deploy/k8s/sidecar, run here as the kubelet would start it:
// the container's args from `kubectl kustomize` with $(VAR) expanded from
// the downward API (made-up pod, namespace and node), its ConfigMap's config
// with the pod's paths moved into a temp dir and the metrics port to a free
// one. vLLM's output (the bundled example) is written where tee writes it;
// the incident must come out with the pod's labels, and the probes' paths
// must answer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <csignal>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "deploy/shell.h"
#include "testing/http_client.h"
#include "testing/run_harness.h"

namespace fingerprintd::testing {
namespace {

namespace fs = std::filesystem;
using run_harness::Json;

std::string Replaced(std::string text, const std::map<std::string, std::string>& replacements) {
  for (const auto& [from, to] : replacements) {
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) {
      text.replace(at, from.size(), to);
    }
  }
  return text;
}

class K8sSidecarRunTest : public run_harness::RunFixture {};

// The sidecar's container args are `run --config FILE --label pod=... --label
// namespace=... --label node=...`: the downward-API labels reach the daemon
// that way and must be on its incidents.
TEST_F(K8sSidecarRunTest, TheSidecarAsTheKubeletStartsItReportsTheExampleFailure) {
  CommandResult built = Shell("kubectl kustomize " + Quoted(SourceDir() + "/deploy/k8s/sidecar"));
  ASSERT_EQ(built.exit_code, 0) << built.out;
  YAML::Node container, config_map;
  for (const YAML::Node& doc : YAML::LoadAll(built.out)) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "ConfigMap") config_map = doc;
    if (kind != "Deployment") continue;
    for (const YAML::Node& c : doc["spec"]["template"]["spec"]["containers"]) {
      if (c["name"].as<std::string>() == "fingerprintd") container = c;
    }
  }
  ASSERT_TRUE(container && config_map);

  // The pod's filesystem, here: the emptyDir vLLM tees into and the state dir.
  fs::create_directories(dir_ / "vllm");
  const std::string config_path = (dir_ / "fingerprintd.yaml").string();
  std::ofstream(config_path) << Replaced(
      config_map["data"]["fingerprintd.yaml"].as<std::string>(),
      {{"/var/log/vllm", (dir_ / "vllm").string()},
       {"/var/lib/fingerprintd", (dir_ / "state").string()},
       {"0.0.0.0:9464", "127.0.0.1:0"},
       {"/etc/fingerprintd-secret/token", (dir_ / "token").string()},
       {"incidents: {path: \"-\"}", "incidents: {path: \"" + Incidents().string() + "\"}"}});
  fs::create_directories(dir_ / "state");
  std::ofstream(dir_ / "token") << "s3cret-token\n";  // the Secret fingerprintd-http-token
  const std::map<std::string, std::string> downward_api = {
      {"$(POD_NAME)", "qwen3-fp8-7d9f8c6b5-x2x9k"},
      {"$(POD_NAMESPACE)", "inference"},
      {"$(NODE_NAME)", "gpu-node-1"}};
  std::vector<std::string> args;
  for (const YAML::Node& arg : container["args"]) {
    args.push_back(Replaced(arg.as<std::string>(), downward_api));
  }
  ASSERT_EQ(args[0], "run");
  args.erase(args.begin());  // DaemonProcess says `run`
  args[1] = config_path;     // --config /etc/fingerprintd/fingerprintd.yaml
  run_harness::DaemonProcess daemon(args, dir_ / "daemon.err");

  uint16_t metrics_port = 0;
  ASSERT_TRUE(run_harness::WaitFor([&] {
    metrics_port = run_harness::HttpPortIn(Stderr());
    return metrics_port != 0;
  })) << Stderr();
  EXPECT_EQ(HttpGet(metrics_port, container["livenessProbe"]["httpGet"]["path"].Scalar()).status,
            200);
  // Not ready until vLLM's log is there for its glob (issue 29: a glob that
  // matches nothing is not a healthy source); ready as soon as it is.
  const std::string readiness = container["readinessProbe"]["httpGet"]["path"].Scalar();
  EXPECT_TRUE(run_harness::WaitFor([&] { return HttpGet(metrics_port, readiness).status == 503; }));
  EXPECT_THAT(HttpGet(metrics_port, readiness).body, ::testing::HasSubstr("no_match"));

  AppendTo(dir_ / "vllm" / "vllm.log",
           run_harness::ReadFile(SourceDir() + "/examples/qwen3-fp8-rtx5090/worker.log"));
  EXPECT_TRUE(run_harness::WaitFor([&] { return HttpGet(metrics_port, readiness).status == 200; }))
      << HttpGet(metrics_port, readiness).body;
  Json incident;
  ASSERT_TRUE(run_harness::WaitFor([&] {
    for (const Json& j : IncidentLines()) {
      if (j["rule"] == "deepgemm-unknown-sf-transformation" && j["workers"]["affected"] == 2) {
        incident = j;
      }
    }
    return !incident.is_null();
  })) << Stderr();
  EXPECT_EQ(incident["deployment"], "inference/qwen3-fp8-7d9f8c6b5-x2x9k");
  EXPECT_EQ(incident["labels"]["node"], "gpu-node-1");
  EXPECT_EQ(incident["labels"]["pod"], "qwen3-fp8-7d9f8c6b5-x2x9k");
  EXPECT_EQ(incident["labels"]["namespace"], "inference");
  EXPECT_EQ(daemon.Kill(SIGTERM), 0);
}

}  // namespace
}  // namespace fingerprintd::testing
