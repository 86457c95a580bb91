// deploy/k8s as `kubectl apply -k` would send it, without a cluster: every
// kustomize overlay builds with `kubectl kustomize`, the fingerprintd config
// inside every ConfigMap passes `fingerprintd config check`, and every pod
// running fingerprintd is hardened, probed, scraped and fenced as README's
// Kubernetes quick-start promises.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "deploy/shell.h"
#include "fingerprintd/source.h"
#include "testing/cli_runner.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;

std::string K8sDir() { return SourceDir() + "/deploy/k8s"; }

// Every directory under deploy/k8s with a kustomization.yaml, relative ("sidecar").
std::vector<std::string> Overlays() {
  std::vector<std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(K8sDir())) {
    if (entry.path().filename() == "kustomization.yaml") {
      out.push_back(fs::relative(entry.path().parent_path(), K8sDir()).string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The documents `kubectl kustomize deploy/k8s/<overlay>` prints.
std::vector<YAML::Node> Build(const std::string& overlay) {
  CommandResult run = Shell("kubectl kustomize " + Quoted(K8sDir() + "/" + overlay));
  EXPECT_EQ(run.exit_code, 0) << "kubectl kustomize " << overlay << ":\n" << run.out;
  if (run.exit_code != 0) return {};
  return YAML::LoadAll(run.out);
}

std::vector<YAML::Node> OfKind(const std::vector<YAML::Node>& docs, const std::string& kind) {
  std::vector<YAML::Node> out;
  for (const YAML::Node& doc : docs) {
    if (doc["kind"].as<std::string>() == kind) out.push_back(doc);
  }
  return out;
}

// The pod spec of a Deployment, DaemonSet or Job (or a Pod's own spec).
YAML::Node PodSpec(const YAML::Node& workload) {
  if (workload["kind"].as<std::string>() == "Pod") return workload["spec"];
  return workload["spec"]["template"]["spec"];
}

std::vector<YAML::Node> Workloads(const std::vector<YAML::Node>& docs) {
  std::vector<YAML::Node> out;
  for (const char* kind : {"Deployment", "DaemonSet", "Job", "Pod"}) {
    for (const YAML::Node& doc : OfKind(docs, kind)) out.push_back(doc);
  }
  return out;
}

bool IsFingerprintd(const YAML::Node& container) {
  return container["image"].as<std::string>().find("fingerprintd") != std::string::npos;
}

std::vector<std::string> Strings(const YAML::Node& sequence) {
  std::vector<std::string> out;
  for (const YAML::Node& item : sequence) out.push_back(item.as<std::string>());
  return out;
}

// The overlays that run the daemon (not the replay Job).
const std::vector<std::string> kDaemonOverlays = {"daemonset", "sidecar", "sidecar-kubelet-log"};

TEST(K8sManifestsTest, EveryOverlayBuildsWithKubectlKustomize) {
  ASSERT_EQ(Shell("command -v kubectl").exit_code, 0)
      << "kubectl is missing: deploy/install-deps.sh installs it (kubernetes-client)";
  std::vector<std::string> overlays = Overlays();
  for (const char* expected :
       {"daemonset", "replay-job", "replay-job/collect", "sidecar", "sidecar-kubelet-log"}) {
    EXPECT_THAT(overlays, Contains(expected));
  }
  for (const std::string& overlay : overlays) {
    SCOPED_TRACE(overlay);
    EXPECT_FALSE(Build(overlay).empty());
  }
}

TEST_F(CliTest, TheConfigInEveryConfigMapPassesConfigCheck) {
  int checked = 0;
  for (const std::string& overlay : Overlays()) {
    for (const YAML::Node& map : OfKind(Build(overlay), "ConfigMap")) {
      for (const auto& item : map["data"]) {
        const std::string key = item.first.as<std::string>();
        SCOPED_TRACE(overlay + ": ConfigMap " + map["metadata"]["name"].as<std::string>() + " " +
                     key);
        fs::path file = dir_ / (std::to_string(checked++) + "-" + key);
        std::ofstream(file) << item.second.as<std::string>();
        CommandResult check = Fingerprintd("config check " + Quoted(file));
        EXPECT_EQ(check.exit_code, 0) << check.out;
        EXPECT_THAT(check.out, HasSubstr(": ok, 1 source(s)"));
      }
    }
  }
  EXPECT_EQ(checked, 3);  // daemonset, sidecar, sidecar-kubelet-log
}

TEST(K8sManifestsTest, EveryFingerprintdContainerIsHardenedWithRequestsAndLimits) {
  int containers = 0;
  for (const std::string& overlay : Overlays()) {
    for (const YAML::Node& workload : Workloads(Build(overlay))) {
      const YAML::Node pod = PodSpec(workload);
      EXPECT_FALSE(pod["automountServiceAccountToken"].as<bool>(true)) << overlay;
      EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"].as<std::string>(""),
                "RuntimeDefault")
          << overlay;
      for (const char* list : {"initContainers", "containers"}) {
        for (const YAML::Node& c : pod[list]) {
          if (!IsFingerprintd(c)) continue;
          ++containers;
          SCOPED_TRACE(overlay + ": container " + c["name"].as<std::string>());
          const YAML::Node sc = c["securityContext"];
          EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false));
          EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true));
          EXPECT_EQ(Strings(sc["capabilities"]["drop"]), std::vector<std::string>{"ALL"});
          EXPECT_EQ(sc["seccompProfile"]["type"].as<std::string>(""), "RuntimeDefault");
          if (std::string(list) == "containers") {
            EXPECT_TRUE(sc["runAsNonRoot"].as<bool>(false));
            EXPECT_GT(sc["runAsUser"].as<int>(0), 0);
            EXPECT_FALSE(sc["capabilities"]["add"]);
          } else {
            // The DaemonSet's chown of its hostPath state dir: root, CHOWN only.
            EXPECT_EQ(Strings(sc["capabilities"]["add"]), std::vector<std::string>{"CHOWN"});
          }
          for (const char* kind : {"requests", "limits"}) {
            EXPECT_TRUE(c["resources"][kind]["cpu"]) << kind;
            EXPECT_TRUE(c["resources"][kind]["memory"]) << kind;
          }
        }
      }
    }
  }
  EXPECT_GE(containers, 6);
}

TEST(K8sManifestsTest, DaemonsAreProbedOnHealthzAndReadyzAndRunTheirConfigMap) {
  for (const std::string& overlay : kDaemonOverlays) {
    SCOPED_TRACE(overlay);
    std::vector<YAML::Node> docs = Build(overlay);
    std::vector<YAML::Node> workloads = Workloads(docs);
    ASSERT_EQ(workloads.size(), 1u);
    const YAML::Node pod = PodSpec(workloads[0]);
    int daemons = 0;
    for (const YAML::Node& c : pod["containers"]) {
      if (!IsFingerprintd(c)) continue;
      ++daemons;
      ASSERT_EQ(c["ports"].size(), 1u);
      EXPECT_EQ(c["ports"][0]["containerPort"].as<int>(), 9464);
      const std::string port = c["ports"][0]["name"].as<std::string>();
      EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(""), "/healthz");
      EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"].as<std::string>(""), port);
      EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(""), "/readyz");
      EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"].as<std::string>(""), port);
      // run --config <the mounted ConfigMap's file>
      std::vector<std::string> args = Strings(c["args"]);
      ASSERT_GE(args.size(), 3u);
      EXPECT_EQ(args[0], "run");
      EXPECT_EQ(args[1], "--config");
      std::string config_volume;
      for (const YAML::Node& m : c["volumeMounts"]) {
        if (args[2].starts_with(m["mountPath"].as<std::string>() + "/")) {
          config_volume = m["name"].as<std::string>();
          EXPECT_TRUE(m["readOnly"].as<bool>(false));
        }
      }
      std::string config_map;
      for (const YAML::Node& v : pod["volumes"]) {
        if (v["name"].as<std::string>() == config_volume) {
          config_map = v["configMap"]["name"].as<std::string>("");
        }
      }
      bool found = false;
      for (const YAML::Node& map : OfKind(docs, "ConfigMap")) {
        if (map["metadata"]["name"].as<std::string>() != config_map) continue;
        found = map["data"][fs::path(args[2]).filename().string()].IsDefined();
      }
      EXPECT_TRUE(found) << args[2] << " is not a key of a ConfigMap mounted there";
    }
    EXPECT_EQ(daemons, 1);
  }
}

TEST(K8sManifestsTest, PodMonitorScrapesAndNetworkPolicyOpensOnlyTheMetricsPort) {
  for (const std::string& overlay : kDaemonOverlays) {
    SCOPED_TRACE(overlay);
    std::vector<YAML::Node> docs = Build(overlay);
    const YAML::Node pod_labels = Workloads(docs)[0]["spec"]["template"]["metadata"]["labels"];
    auto selects = [&](const YAML::Node& match_labels) {
      for (const auto& item : match_labels) {
        if (pod_labels[item.first.as<std::string>()].as<std::string>("") !=
            item.second.as<std::string>()) {
          return false;
        }
      }
      return match_labels.size() > 0;
    };
    std::vector<YAML::Node> monitors = OfKind(docs, "PodMonitor");
    ASSERT_EQ(monitors.size(), 1u);
    EXPECT_TRUE(selects(monitors[0]["spec"]["selector"]["matchLabels"]));
    const YAML::Node endpoint = monitors[0]["spec"]["podMetricsEndpoints"][0];
    EXPECT_EQ(endpoint["path"].as<std::string>(), "/metrics");
    bool job_is_fingerprintd = false;  // alerts.yml's FingerprintdDown: up{job="fingerprintd"}
    for (const YAML::Node& r : endpoint["relabelings"]) {
      job_is_fingerprintd |= r["targetLabel"].as<std::string>() == "job" &&
                             r["replacement"].as<std::string>() == "fingerprintd";
    }
    EXPECT_TRUE(job_is_fingerprintd);

    std::vector<YAML::Node> policies = OfKind(docs, "NetworkPolicy");
    ASSERT_EQ(policies.size(), 1u);
    EXPECT_TRUE(selects(policies[0]["spec"]["podSelector"]["matchLabels"]));
    std::set<int> open;
    for (const YAML::Node& rule : policies[0]["spec"]["ingress"]) {
      ASSERT_TRUE(rule["ports"]) << "an ingress rule without ports opens every port";
      for (const YAML::Node& p : rule["ports"]) open.insert(p["port"].as<int>());
    }
    // The sidecar's pod also serves vLLM's API (8000); nothing else is open.
    std::set<int> expected =
        overlay == "daemonset" ? std::set<int>{9464} : std::set<int>{8000, 9464};
    EXPECT_EQ(open, expected);
    // The alerting rules come from deploy/k8s/monitoring, once.
    EXPECT_EQ(OfKind(docs, "PrometheusRule").size(), 1u);
  }
}

// The one writable log mount is the sidecar's own emptyDir, whose file it
// releases as it reads it (release_read_bytes); a node's logs (hostPath) are
// never written.
TEST(K8sManifestsTest, LogsAreMountedReadOnlyButTheEmptyDirTheSidecarReleases) {
  for (const std::string& overlay : Overlays()) {
    std::vector<YAML::Node> docs = Build(overlay);
    bool releases = false;
    for (const YAML::Node& map : OfKind(docs, "ConfigMap")) {
      for (const auto& item : map["data"]) {
        releases |=
            item.second.as<std::string>().find("release_read_bytes: true") != std::string::npos;
      }
    }
    for (const YAML::Node& workload : Workloads(docs)) {
      const YAML::Node pod = PodSpec(workload);
      std::map<std::string, std::string> host_paths;
      std::set<std::string> empty_dirs;
      for (const YAML::Node& v : pod["volumes"]) {
        if (v["hostPath"]) host_paths[v["name"].as<std::string>()] = v["hostPath"]["path"].Scalar();
        if (v["emptyDir"]) empty_dirs.insert(v["name"].as<std::string>());
      }
      for (const YAML::Node& c : pod["containers"]) {
        if (!IsFingerprintd(c)) continue;
        for (const YAML::Node& m : c["volumeMounts"]) {
          const std::string path = m["mountPath"].as<std::string>();
          const std::string name = m["name"].as<std::string>();
          SCOPED_TRACE(overlay + ": " + path);
          if (path.starts_with("/var/log") || host_paths.count(name)) {
            EXPECT_TRUE(m["readOnly"].as<bool>(false) || path == "/var/lib/fingerprintd" ||
                        (releases && empty_dirs.count(name) && !host_paths.count(name)));
          }
        }
      }
    }
  }
}

uint64_t Quantity(const std::string& text) {
  uint64_t number = std::stoull(text);
  if (text.ends_with("Gi")) return number << 30;
  if (text.ends_with("Mi")) return number << 20;
  if (text.ends_with("Ki")) return number << 10;
  return number;
}

// Issue 33: the emptyDir vLLM tees into stays bounded. The sidecar's config
// releases what it read with a bound, the emptyDir's sizeLimit leaves most of
// itself for a sidecar restart beyond that bound, and the file tee creates is
// writable by the sidecar's group.
TEST(K8sManifestsTest, TheSidecarKeepsTheTeedLogUnderABoundWellWithinTheEmptyDirSizeLimit) {
  std::vector<YAML::Node> docs = Build("sidecar");
  std::vector<YAML::Node> maps = OfKind(docs, "ConfigMap");
  ASSERT_EQ(maps.size(), 1u);
  const YAML::Node config = YAML::Load(maps[0]["data"]["fingerprintd.yaml"].as<std::string>());
  const YAML::Node source = config["sources"][0];
  EXPECT_TRUE(source["release_read_bytes"].as<bool>(false));
  const uint64_t bound = Quantity(source["max_retained_bytes"].as<std::string>("0"));
  std::vector<YAML::Node> deployments = OfKind(docs, "Deployment");
  ASSERT_EQ(deployments.size(), 1u);
  const YAML::Node pod = PodSpec(deployments[0]);
  uint64_t size_limit = 0;
  for (const YAML::Node& v : pod["volumes"]) {
    if (v["name"].as<std::string>() == "vllm-log") {
      size_limit = Quantity(v["emptyDir"]["sizeLimit"].as<std::string>());
    }
  }
  EXPECT_GT(bound, 0u);
  EXPECT_LE(4 * bound, size_limit) << "the sizeLimit leaves room for a sidecar restart";
  for (const YAML::Node& c : pod["containers"]) {
    if (IsFingerprintd(c)) {
      EXPECT_EQ(pod["securityContext"]["fsGroup"].as<int64_t>(-1),
                c["securityContext"]["runAsGroup"].as<int64_t>(-2));
    } else {
      EXPECT_THAT(c["args"][0].as<std::string>(),
                  HasSubstr("{ umask 0002; exec tee -a /var/log/vllm/vllm.log; }"));
    }
  }
  std::ifstream in(K8sDir() + "/sidecar/deployment.yaml");
  const std::string manifest((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  EXPECT_THAT(manifest, HasSubstr("At the limit the kubelet evicts the pod"));
}

TEST(K8sManifestsTest, ReplayJobIsIndexedWithAsManyShardsAsCompletions) {
  std::vector<YAML::Node> jobs = OfKind(Build("replay-job"), "Job");
  ASSERT_EQ(jobs.size(), 1u);
  const YAML::Node spec = jobs[0]["spec"];
  EXPECT_EQ(spec["completionMode"].as<std::string>(), "Indexed");
  auto shards_env = [](const YAML::Node& container) {
    for (const YAML::Node& e : container["env"]) {
      if (e["name"].as<std::string>() == "SHARDS") return e["value"].as<int>();
    }
    return -1;
  };
  const YAML::Node replay = spec["template"]["spec"]["containers"][0];
  EXPECT_EQ(shards_env(replay), spec["completions"].as<int>());
  EXPECT_THAT(replay["args"][0].as<std::string>(),
              HasSubstr("--shard \"$JOB_COMPLETION_INDEX/$SHARDS\""));
  std::vector<YAML::Node> collect = OfKind(Build("replay-job/collect"), "Pod");
  ASSERT_EQ(collect.size(), 1u);
  EXPECT_EQ(shards_env(collect[0]["spec"]["containers"][0]), spec["completions"].as<int>());
}

// The DaemonSet's deployment_from, through the daemon's own naming rule.
TEST(K8sManifestsTest, DaemonSetNamesDeploymentsByWorkloadFromThePodPath) {
  std::string config;
  for (const YAML::Node& map : OfKind(Build("daemonset"), "ConfigMap")) {
    config = map["data"]["fingerprintd.yaml"].as<std::string>();
  }
  const std::string pattern = YAML::Load(config)["sources"][0]["deployment_from"].as<std::string>();
  RE2 deployment_from(pattern);
  ASSERT_TRUE(deployment_from.ok()) << pattern;
  auto name = [&](const std::string& pod) {
    return source::DeploymentForPath({}, &deployment_from,
                                     "/var/log/pods/inference_" + pod + "_0f3e6a2c/vllm/0.log", "");
  };
  EXPECT_EQ(name("qwen3-fp8-7d9f8c6b5-x2x9k"), "inference/qwen3-fp8");  // Deployment
  EXPECT_EQ(name("qwen3-fp8-58b4cd97fb-abcde"), "inference/qwen3-fp8");
  EXPECT_EQ(name("llama-70b-0"), "inference/llama-70b");  // StatefulSet
  EXPECT_EQ(name("llama-70b-12"), "inference/llama-70b");
  EXPECT_EQ(name("ds-v3-0"), "inference/ds-v3");            // LeaderWorkerSet leader
  EXPECT_EQ(name("ds-v3-0-1"), "inference/ds-v3");          // and its worker
  EXPECT_EQ(name("bench-x2x9k"), "inference/bench-x2x9k");  // a Job's pod: the pod
}

}  // namespace
}  // namespace fingerprintd::testing
