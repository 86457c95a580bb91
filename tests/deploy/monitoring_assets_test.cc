// The alerting assets stay true to the daemon: the PrometheusRule manifest
// carries exactly alerts.yml's groups, every metric an alert or a dashboard
// query names is one the daemon exports (its own serializer, sink::Metrics),
// every hardware-support rule of the pack has its remedy in the page, and
// every runbook an alert points at is a README section. promtool and amtool
// check the same files for syntax and behaviour (CMakeLists.txt).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "sink/metrics.h"
#include "testing/replay_harness.h"

namespace fingerprintd::testing {
namespace {

using ::testing::HasSubstr;

std::string ReadText(const std::string& relative) {
  std::ifstream in(SourceDir() + "/" + relative, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

YAML::Node LoadYaml(const std::string& relative) { return YAML::Load(ReadText(relative)); }

// Structural equality: mappings by key, sequences in order, scalars as text.
bool SameYaml(const YAML::Node& a, const YAML::Node& b, const std::string& path,
              std::string* where) {
  if (a.Type() != b.Type()) {
    *where = path + ": different node types";
    return false;
  }
  if (a.IsScalar()) {
    if (a.Scalar() == b.Scalar()) return true;
    *where = path + ": '" + a.Scalar() + "' vs '" + b.Scalar() + "'";
    return false;
  }
  if (a.size() != b.size()) {
    *where = path + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " items";
    return false;
  }
  if (a.IsSequence()) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameYaml(a[i], b[i], path + "[" + std::to_string(i) + "]", where)) return false;
    }
    return true;
  }
  for (const auto& item : a) {
    std::string key = item.first.as<std::string>();
    if (!b[key]) {
      *where = path + "." + key + ": missing";
      return false;
    }
    if (!SameYaml(item.second, b[key], path + "." + key, where)) return false;
  }
  return true;
}

// The metric families the daemon serves on /metrics, from its own serializer
// with every family given a value.
std::set<std::string> ExportedFamilies() {
  sink::Metrics metrics("test");
  for (size_t i = 0; i <= sink::kMaxLabelValues; ++i) {  // one past the cap: label_overflow
    metrics.LineRead("/logs/" + std::to_string(i) + ".log", 1);
  }
  metrics.LineDropped(DropReason::kBinary);
  metrics.TimeGuessed(TimeFallback::kYearFromMtime);
  metrics.RuleMatched("r", "s");
  metrics.IncidentOpened("r", "c", "critical");
  metrics.FileRotated();
  metrics.FileTruncated();
  metrics.StateEvicted(Evicted::kAlert);
  metrics.LineReread("/logs/0.log", 1);
  metrics.RereadAtRestore("/logs/0.log", 1);
  auto rules = EmbeddedRules();
  correlate::Incident incident;
  incident.incident_id = "inc";
  incident.rule = std::shared_ptr<const rules::Rule>(rules, &rules->rules().front());
  incident.deployment = "d";
  incident.ranks = {0};
  incident.signature = "sig-0123456789abcdef";
  metrics.OnIncident(correlate::IncidentChange::kOpened, incident);
  metrics.SetRulesLoaded(1);
  metrics.RuleReloadFailed();
  metrics.CheckpointSaved(1);
  metrics.CheckpointFailed();
  metrics.SetSourcesOpen("file", 1);
  metrics.SetSourceLags({{"/logs/0.log", 1}});
  metrics.SetGlobMatched("/logs/*.log", 1);
  metrics.SourceError("no_match");
  metrics.FileOpened("end");
  metrics.BytesUnread("truncated_unread");
  metrics.SetHttpRequests("answered", 0);
  std::set<std::string> families;
  std::istringstream text(metrics.Serialize(2));
  for (std::string line; std::getline(text, line);) {
    if (line.starts_with("# TYPE ")) families.insert(line.substr(7, line.find(' ', 7) - 7));
  }
  return families;
}

// Names of the form fingerprintd_* in a PromQL expression (recorded series,
// `a:b:c`, and functions are not metric families of the daemon).
std::vector<std::string> DaemonMetricsIn(const std::string& expr) {
  static const std::regex kName(R"([A-Za-z_:][A-Za-z0-9_:]*)");
  std::vector<std::string> out;
  for (std::sregex_iterator it(expr.begin(), expr.end(), kName), end; it != end; ++it) {
    std::string name = it->str();
    if (name.starts_with("fingerprintd_")) out.push_back(name);
  }
  return out;
}

std::vector<std::string> AlertExprs() {
  std::vector<std::string> out;
  for (const auto& group : LoadYaml("deploy/prometheus/alerts.yml")["groups"]) {
    for (const auto& rule : group["rules"]) out.push_back(rule["expr"].as<std::string>());
  }
  return out;
}

YAML::Node AlertRule(const std::string& name) {
  for (const auto& group : LoadYaml("deploy/prometheus/alerts.yml")["groups"]) {
    for (const auto& rule : group["rules"]) {
      if (rule["alert"] && rule["alert"].as<std::string>() == name) return rule;
    }
  }
  return YAML::Node();
}

TEST(MonitoringAssetsTest, ThePrometheusRuleManifestCarriesExactlyTheGroupsOfAlertsYml) {
  YAML::Node alerts = LoadYaml("deploy/prometheus/alerts.yml");
  YAML::Node manifest = LoadYaml("deploy/k8s/monitoring/prometheusrule.yaml");
  EXPECT_EQ(manifest["kind"].as<std::string>(), "PrometheusRule");
  EXPECT_EQ(manifest["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");
  std::string where;
  EXPECT_TRUE(SameYaml(alerts["groups"], manifest["spec"]["groups"], "groups", &where)) << where;
  EXPECT_THAT(ReadText("deploy/k8s/monitoring/kustomization.yaml"),
              HasSubstr("- prometheusrule.yaml"));
}

TEST(MonitoringAssetsTest, EveryMetricTheAlertsNameIsOneTheDaemonExports) {
  std::set<std::string> exported = ExportedFamilies();
  ASSERT_TRUE(exported.count("fingerprintd_worker_failures")) << exported.size();
  size_t named = 0;
  for (const std::string& expr : AlertExprs()) {
    for (const std::string& name : DaemonMetricsIn(expr)) {
      EXPECT_TRUE(exported.count(name)) << name << " in: " << expr;
      ++named;
    }
  }
  EXPECT_GE(named, 5u);  // worker_failures, source_lag, reload failures, evictions, ...
}

TEST(MonitoringAssetsTest, EveryDashboardQueryUsesOnlyMetricsTheDaemonExports) {
  std::set<std::string> exported = ExportedFamilies();
  auto dashboard = nlohmann::json::parse(ReadText("deploy/grafana/fingerprintd.json"));
  std::vector<std::string> exprs;
  for (const auto& panel : dashboard["panels"]) {
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel["targets"]) exprs.push_back(target["expr"]);
  }
  for (const auto& variable : dashboard["templating"]["list"]) {
    if (variable["type"] == "query") exprs.push_back(variable["query"]["query"]);
  }
  ASSERT_GE(exprs.size(), 15u);
  std::set<std::string> used;
  for (const std::string& expr : exprs) {
    std::vector<std::string> names = DaemonMetricsIn(expr);
    EXPECT_FALSE(names.empty()) << "no fingerprintd metric in: " << expr;
    for (const std::string& name : names) {
      EXPECT_TRUE(exported.count(name)) << name << " in: " << expr;
      used.insert(name);
    }
  }
  // The dashboard shows every family the daemon exports.
  for (const std::string& family : exported) EXPECT_TRUE(used.count(family)) << family;
}

TEST(MonitoringAssetsTest, EveryHardwareSupportRuleOfThePackHasItsRemedyInThePage) {
  std::string remediation =
      AlertRule("FingerprintdHardwareSupportGap")["annotations"]["remediation"].as<std::string>();
  int hardware_rules = 0;
  for (const rules::Rule& rule : EmbeddedRules()->rules()) {
    if (rule.rule_class != "hardware_support") continue;
    ++hardware_rules;
    EXPECT_THAT(remediation, HasSubstr("eq $labels.rule \"" + rule.id + "\""))
        << rule.id << " has no remedy in FingerprintdHardwareSupportGap";
  }
  EXPECT_GE(hardware_rules, 5);
}

TEST(MonitoringAssetsTest, EveryRunbookAnAlertPointsAtIsAReadmeSection) {
  std::string readme = ReadText("README.md");
  std::set<std::string> classes;
  for (const rules::Rule& rule : EmbeddedRules()->rules()) {
    if (rule.kind == rules::RuleKind::kFailure) classes.insert(rule.rule_class);  // ready: none
  }
  for (const std::string& rule_class : classes) {
    EXPECT_THAT(readme, HasSubstr("\n#### Runbook: " + rule_class + "\n")) << rule_class;
  }
  for (const char* name :
       {"FingerprintdHardwareSupportGap", "FingerprintdDeploymentFailed",
        "FingerprintdUnclassifiedFailure", "FingerprintdDown", "FingerprintdStalled",
        "FingerprintdRuleReloadFailed", "FingerprintdAlertsDropped"}) {
    YAML::Node rule = AlertRule(name);
    ASSERT_TRUE(rule) << name;
    std::string runbook = rule["annotations"]["runbook"].as<std::string>();
    ASSERT_TRUE(runbook.starts_with("README.md, Runbook: ")) << runbook;
    std::string section = runbook.substr(std::string("README.md, ").size());
    if (section.find("{{") != std::string::npos) continue;  // per class: checked above
    EXPECT_THAT(readme, HasSubstr("\n#### " + section + "\n")) << name;
  }
}

}  // namespace
}  // namespace fingerprintd::testing
