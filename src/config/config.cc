// The config adapter: yaml-cpp through common/yaml_strict, all-or-nothing,
// every error `file:line: key: reason`.
#include "config/config.h"

#include <re2/re2.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/host_port.h"
#include "common/http_url.h"
#include "common/re2_limits.h"
#include "common/yaml_strict.h"
#include "config/alertmanager_access.h"
#include "config/source_types.h"
#include "fingerprintd/source.h"

namespace fingerprintd::config {

using yaml_strict::CheckKeys;
using yaml_strict::FieldName;
using yaml_strict::GetBool;
using yaml_strict::GetDuration;
using yaml_strict::GetString;
using yaml_strict::GetStringList;
using yaml_strict::GetStringMap;
using yaml_strict::GetUint;
using yaml_strict::YamlErrors;

std::string_view SourceTypeName(SourceType type) {
  switch (type) {
    case SourceType::kFile:
      return "file";
    case SourceType::kTcp:
      return "tcp";
    case SourceType::kUnix:
      return "unix";
    case SourceType::kStdin:
      return "stdin";
  }
  return "?";
}

Status CheckListenAddress(const std::string& address) {
  std::string host;
  int port = -1;
  static const RE2 kHostPort(R"((\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5}))");
  if (!RE2::FullMatch(address, kHostPort, &host, &port) || port > 65535) {
    return InvalidArgumentError("expected host:port (e.g. 127.0.0.1:9464), got '" + address + "'");
  }
  return OkStatus();
}

Status CheckLoopbackOrAllowed(const std::string& address, bool allow_remote) {
  std::string host;
  uint16_t port = 0;
  if (allow_remote || (SplitHostPort(address, &host, &port) && IsLoopbackHost(host))) {
    return OkStatus();
  }
  return InvalidArgumentError("'" + address +
                              "' listens beyond loopback; set allow_remote: true beside it to "
                              "accept connections from other hosts");
}

std::unique_ptr<RE2> CompileDeploymentFrom(const std::string& pattern) {
  if (pattern.empty()) return nullptr;
  return std::make_unique<RE2>(pattern, BoundedRe2Options());
}

std::string DeploymentForPath(const std::map<std::string, std::string>& labels,
                              const RE2* deployment_from, const std::string& path) {
  return source::DeploymentForPath(labels, deployment_from, path, path);
}

// The file's error format and the list every error goes to: a parse goes on
// past an error so that `config check` reports all of them at once.
struct ConfigErrors {
  explicit ConfigErrors(const std::string& file) : format(file), list(file) {}
  // Records `s` when it is an error; true when it is not.
  bool Add(const Status& s) { return list.Add(s); }
  void At(const YAML::Node& node, std::string_view field, std::string_view reason) {
    list.Add(format.Error(node, field, reason));
  }
  YamlErrors format;
  yaml_strict::ErrorList list;
};

namespace {

// The config's fixed patterns, compiled once: a parse (every SIGHUP) then
// compiles no regex but the file's own deployment_from.
const RE2& LabelName() {
  static const RE2 re("[A-Za-z_][A-Za-z0-9_]*");
  return re;
}

// A label as Prometheus and Alertmanager take it; "" when it is one. The one
// check for the config file's labels and `--label` (run and replay).
std::string LabelProblem(const std::string& key, const std::string& value) {
  if (!RE2::FullMatch(key, LabelName())) {
    return "label name '" + key + "' must match [A-Za-z_][A-Za-z0-9_]*";
  }
  if (value.empty()) return "label '" + key + "' has an empty value";
  return "";
}

// `labels:` of a source or of alertmanager.
void ParseLabels(ConfigErrors& e, const YAML::Node& node, const std::string& where,
                 std::map<std::string, std::string>* out) {
  e.Add(GetStringMap(e.format, node, where, "labels", out));
  for (const auto& [key, value] : *out) {
    if (std::string problem = LabelProblem(key, value); !problem.empty()) {
      e.At(node["labels"], FieldName(where, "labels"), problem);
    }
  }
}

// An RE2 with at least one capture group (they name the deployment).
std::string DeploymentFromProblem(const std::string& pattern) {
  RE2 re(pattern, BoundedRe2Options());
  if (std::string problem = Re2Problem(re); !problem.empty()) return problem;
  if (re.NumberOfCapturingGroups() < 1) return "needs a capture group (it names the deployment)";
  return "";
}

// `deployment_from`, optional, for every source type that takes it.
void ParseDeploymentFrom(ConfigErrors& e, const YAML::Node& node, const std::string& where,
                         std::string* out) {
  e.Add(GetString(e.format, node, where, "deployment_from", false, out));
  if (out->empty()) return;
  if (std::string problem = DeploymentFromProblem(*out); !problem.empty()) {
    e.At(node["deployment_from"], FieldName(where, "deployment_from"), problem);
  }
}

// An integer key of a section that must be at least `min` / more than 0.
void GetAtLeast(ConfigErrors& e, const YAML::Node& node, const std::string& where,
                std::string_view key, uint64_t min, uint64_t max, uint64_t* out) {
  if (!e.Add(GetUint(e.format, node, where, key, max, out))) return;
  if (*out < min) {
    e.At(node[std::string(key)], FieldName(where, key), "must be at least " + std::to_string(min));
  }
}
void GetPositive(ConfigErrors& e, const YAML::Node& node, const std::string& where,
                 std::string_view key, uint64_t max, uint64_t* out) {
  if (!e.Add(GetUint(e.format, node, where, key, max, out))) return;
  if (*out == 0) e.At(node[std::string(key)], FieldName(where, key), "must be > 0");
}

// One `sources[i]` mapping: its type's schema reads the rest (config/source_types.h).
void ParseSource(ConfigErrors& e, const SourceTypes& types, const YAML::Node& node,
                 const std::string& where, SourceConfig* out) {
  if (!node.IsMap()) return e.At(node, where, "expected a mapping");
  out->line = node.Mark().line + 1;
  std::string type;
  if (!e.Add(GetString(e.format, node, where, "type", true, &type))) return;
  const SourceTypes::Entry* entry = types.Find(type);
  if (entry == nullptr) {
    return e.At(node["type"], FieldName(where, "type"),
                "expected " + types.Names() + ", got '" + type + "'");
  }
  out->type = entry->type;
  SourceSection section(e, node, where);
  entry->schema(section, out);
}

// Reads `key: {sub: scalar}` sections such as `http: {listen: ...}`; *out is
// left null (IsMap() false) when the section is absent or not a mapping.
void ParseSection(ConfigErrors& e, const YAML::Node& root, const std::string& key,
                  std::initializer_list<std::string_view> allowed, YAML::Node* out) {
  YAML::Node node = root[key];
  if (!node.IsDefined() || node.IsNull()) return;
  e.Add(CheckKeys(e.format, node, key, allowed));
  if (node.IsMap()) *out = node;
}

void ParseTailer(ConfigErrors& e, const YAML::Node& root, TailerConfig* out) {
  YAML::Node node;
  ParseSection(e, root, "tailer",
               {"inotify", "poll_interval", "rescan_interval", "safety_rescan_interval",
                "partial_line_timeout", "max_line_bytes", "max_files"},
               &node);
  if (!node.IsMap()) return;
  const YamlErrors& f = e.format;
  e.Add(GetBool(f, node, "tailer", "inotify", &out->inotify));
  e.Add(GetDuration(f, node, "tailer", "poll_interval", &out->poll_interval_us));
  e.Add(GetDuration(f, node, "tailer", "rescan_interval", &out->rescan_interval_us));
  e.Add(GetDuration(f, node, "tailer", "safety_rescan_interval", &out->safety_rescan_interval_us));
  e.Add(GetDuration(f, node, "tailer", "partial_line_timeout", &out->partial_line_timeout_us));
  GetAtLeast(e, node, "tailer", "max_line_bytes", 1024, kMaxLineBytesCap, &out->max_line_bytes);
  GetPositive(e, node, "tailer", "max_files", 1'000'000, &out->max_files);
}

void ParseLimits(ConfigErrors& e, const YAML::Node& root, LimitsConfig* out) {
  YAML::Node node;
  ParseSection(
      e, root, "limits",
      {"max_open_incidents", "max_held_events", "max_hold", "max_process_streams",
       "max_traceback_frames", "max_traceback_bytes", "traceback_timeout", "symptom_timeout"},
      &node);
  if (!node.IsMap()) return;
  const std::string w = "limits";
  GetAtLeast(e, node, w, "max_open_incidents", 1, 1'000'000, &out->max_open_incidents);
  GetAtLeast(e, node, w, "max_held_events", 1, 10'000'000, &out->max_held_events);
  e.Add(GetDuration(e.format, node, w, "max_hold", &out->max_hold_us));
  GetAtLeast(e, node, w, "max_process_streams", 1, 1'000'000, &out->max_process_streams);
  // The assembler keeps a quarter of the frame cap at the head: at least one.
  GetAtLeast(e, node, w, "max_traceback_frames", 4, 100'000, &out->max_traceback_frames);
  GetAtLeast(e, node, w, "max_traceback_bytes", 1024, kMaxLineBytesCap, &out->max_traceback_bytes);
  e.Add(GetDuration(e.format, node, w, "traceback_timeout", &out->traceback_timeout_us));
  e.Add(GetDuration(e.format, node, w, "symptom_timeout", &out->symptom_timeout_us));
}

void ParseAlertmanager(ConfigErrors& e, const YAML::Node& root, AlertmanagerConfig* out) {
  YAML::Node node;
  ParseSection(e, root, "alertmanager",
               {"url", "tls_config", "basic_auth", "bearer_token_file", "labels", "resend_interval",
                "timeout", "queue_size", "generator_url_base"},
               &node);
  if (!node.IsMap()) return;
  const std::string w = "alertmanager";
  const YamlErrors& f = e.format;
  if (YAML::Node tls = node["tls_config"]; tls.IsDefined() && !tls.IsNull()) {
    const std::string tw = "alertmanager.tls_config";
    if (e.Add(CheckKeys(f, tls, tw, {"ca_file", "cert_file", "key_file", "server_name"}))) {
      e.Add(GetString(f, tls, tw, "ca_file", false, &out->tls.ca_file));
      e.Add(GetString(f, tls, tw, "cert_file", false, &out->tls.cert_file));
      e.Add(GetString(f, tls, tw, "key_file", false, &out->tls.key_file));
      e.Add(GetString(f, tls, tw, "server_name", false, &out->tls.server_name));
    }
  }
  if (YAML::Node basic = node["basic_auth"]; basic.IsDefined() && !basic.IsNull()) {
    const std::string bw = "alertmanager.basic_auth";
    if (e.Add(CheckKeys(f, basic, bw, {"username", "password_file"}))) {
      e.Add(GetString(f, basic, bw, "username", true, &out->auth.username));
      e.Add(GetString(f, basic, bw, "password_file", true, &out->auth.password_file));
    }
  }
  e.Add(GetString(f, node, w, "bearer_token_file", false, &out->auth.bearer_token_file));
  if (e.Add(GetString(f, node, w, "url", true, &out->url))) {
    if (auto url = ParseHttpUrl(out->url); !url.ok()) {
      e.At(node["url"], "alertmanager.url", url.status().message());
    } else if (Status s = CheckAlertmanagerAccess(*url, out->tls, out->auth); !s.ok()) {
      // Its message is "<key>: <reason>": reported at that key's line.
      const std::string& m = s.message();
      const size_t colon = m.find(": ");
      const std::string key = m.substr(0, colon);
      const std::string sub = key.size() > w.size() ? key.substr(w.size() + 1) : "";
      e.At(sub.empty() ? node : node[sub], key, m.substr(colon + 2));
    }
  }
  ParseLabels(e, node, w, &out->labels);
  static const RE2 kBuiltIn("alertname|rule|class|severity|confidence|deployment|incident_id");
  for (const auto& [key, value] : out->labels) {
    if (RE2::FullMatch(key, kBuiltIn)) {
      e.At(node["labels"], "alertmanager.labels",
           "label '" + key + "' is set by fingerprintd on every alert");
    }
  }
  e.Add(GetDuration(e.format, node, w, "resend_interval", &out->resend_interval_us));
  e.Add(GetDuration(e.format, node, w, "timeout", &out->timeout_us));
  GetPositive(e, node, w, "queue_size", 1'000'000, &out->queue_size);
  if (e.Add(GetString(e.format, node, w, "generator_url_base", false, &out->generator_url_base)) &&
      node["generator_url_base"]) {
    auto base = ParseGeneratorUrlBase(out->generator_url_base);
    if (base.ok()) {
      out->generator_url_base = std::move(*base);
    } else {
      e.At(node["generator_url_base"], "alertmanager.generator_url_base", base.status().message());
    }
  }
}

void ParseHttp(ConfigErrors& e, const YAML::Node& root, DaemonConfig* out) {
  // One fresh Node per section: assigning to a bound YAML::Node would
  // overwrite the node it refers to inside the tree.
  YAML::Node http;
  ParseSection(e, root, "http",
               {"listen", "allow_remote", "auth_token_file", "metrics_auth", "history_max_closed",
                "history_max_age"},
               &http);
  if (!http.IsMap()) return;
  e.Add(GetString(e.format, http, "http", "listen", false, &out->http_listen));
  e.Add(GetBool(e.format, http, "http", "allow_remote", &out->http_allow_remote));
  e.Add(GetString(e.format, http, "http", "auth_token_file", false, &out->http_auth_token_file));
  e.Add(GetBool(e.format, http, "http", "metrics_auth", &out->http_metrics_auth));
  if (out->http_allow_remote && out->http_auth_token_file.empty()) {
    e.At(http["allow_remote"], "http.auth_token_file",
         "required with allow_remote: true: a file holding the bearer token clients must "
         "present for /incidents and the status page (a Kubernetes Secret)");
  }
  if (out->http_metrics_auth && out->http_auth_token_file.empty()) {
    e.At(http["metrics_auth"], "http.auth_token_file", "required with metrics_auth: true");
  }
  e.Add(GetUint(e.format, http, "http", "history_max_closed", 1'000'000,
                &out->http_history_max_closed));
  e.Add(GetDuration(e.format, http, "http", "history_max_age", &out->http_history_max_age_us));
  Status s = CheckListenAddress(out->http_listen);
  if (s.ok()) s = CheckLoopbackOrAllowed(out->http_listen, out->http_allow_remote);
  if (!s.ok()) e.At(http["listen"], "http.listen", s.message());
}

void ParseLog(ConfigErrors& e, const YAML::Node& root, DaemonConfig* out) {
  YAML::Node log;
  ParseSection(e, root, "log", {"level", "format"}, &log);
  if (!log.IsMap()) return;
  e.Add(GetString(e.format, log, "log", "level", false, &out->log_level));
  static const RE2 kLevel("trace|debug|info|warn|error|critical|off");
  if (!RE2::FullMatch(out->log_level, kLevel)) {
    e.At(log["level"], "log.level", "expected trace, debug, info, warn, error, critical or off");
  }
  e.Add(GetString(e.format, log, "log", "format", false, &out->log_format));
  if (out->log_format != "text" && out->log_format != "json") {
    e.At(log["format"], "log.format", "expected text or json");
  }
}

// redaction: {defaults: true, patterns: [{kind: k, regex: '...'}, ...]}
void ParseRedaction(ConfigErrors& e, const YAML::Node& root, RedactionConfig* out) {
  YAML::Node redaction;
  ParseSection(e, root, "redaction", {"defaults", "patterns"}, &redaction);
  if (!redaction.IsMap()) return;
  e.Add(GetBool(e.format, redaction, "redaction", "defaults", &out->defaults));
  YAML::Node patterns = redaction["patterns"];
  if (!patterns.IsDefined() || patterns.IsNull()) return;
  if (!patterns.IsSequence()) {
    e.At(patterns, "redaction.patterns", "expected a list of {kind, regex}");
    return;
  }
  for (size_t i = 0; i < patterns.size(); ++i) {
    const std::string where = "redaction.patterns[" + std::to_string(i) + "]";
    const YAML::Node node = patterns[i];
    e.Add(CheckKeys(e.format, node, where, {"kind", "regex"}));
    if (!node.IsMap()) {
      e.At(node, where, "expected a map with kind and regex");
      continue;
    }
    RedactionPattern pattern;
    e.Add(GetString(e.format, node, where, "kind", true, &pattern.kind));
    e.Add(GetString(e.format, node, where, "regex", true, &pattern.regex));
    if (pattern.kind.empty() || pattern.regex.empty()) continue;
    if (std::string problem = Redactor::Problem(pattern); !problem.empty()) {
      const std::string key = problem.rfind("kind", 0) == 0 ? "kind" : "regex";
      e.At(node[key], FieldName(where, key), problem.substr(problem.find(": ") + 2));
      continue;
    }
    out->patterns.push_back(std::move(pattern));
  }
}

// A listen address's host and port, with `localhost` as 127.0.0.1; false for
// port 0 (any free port never clashes) or an address that is not host:port.
bool Endpoint(const std::string& listen, std::string* host, uint16_t* port) {
  if (!SplitHostPort(listen, host, port) || *port == 0) return false;
  if (*host == "localhost") *host = "127.0.0.1";
  return true;
}

// Whether two listen addresses would take the same port: the same port on
// the same host, or on any host when either is a wildcard (0.0.0.0, ::).
bool SamePort(const std::string& a, const std::string& b) {
  std::string host_a, host_b;
  uint16_t port_a = 0, port_b = 0;
  if (!Endpoint(a, &host_a, &port_a) || !Endpoint(b, &host_b, &port_b)) return false;
  auto wildcard = [](const std::string& h) { return h == "0.0.0.0" || h == "::"; };
  return port_a == port_b && (host_a == host_b || wildcard(host_a) || wildcard(host_b));
}

// Two listeners on one port (sources, http) or two sockets on one path fail
// at start-up; `config check` says so first, naming both.
void CheckClashes(ConfigErrors& e, const YAML::Node& sources, const DaemonConfig& config) {
  const auto& all = config.sources;
  // The key's line, or the source's when the key is absent (a default).
  auto at = [&sources](size_t i, const char* key) {
    const YAML::Node node = sources[i][key];
    return node.IsDefined() ? node : sources[i];
  };
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string where = "sources[" + std::to_string(i) + "]";
    for (size_t j = 0; j < i; ++j) {
      const std::string other =
          "sources[" + std::to_string(j) + "] (line " + std::to_string(all[j].line) + ")";
      if (all[i].type == SourceType::kTcp && all[j].type == SourceType::kTcp &&
          SamePort(all[i].listen, all[j].listen)) {
        e.At(at(i, "listen"), FieldName(where, "listen"),
             "'" + all[i].listen + "' takes the port of " + other + ", '" + all[j].listen + "'");
      }
      if (all[i].type == SourceType::kUnix && all[j].type == SourceType::kUnix &&
          all[i].path == all[j].path && !all[i].path.empty()) {
        e.At(at(i, "path"), FieldName(where, "path"),
             "'" + all[i].path + "' is the socket of " + other + " too");
      }
    }
    if (all[i].type == SourceType::kTcp && SamePort(all[i].listen, config.http_listen)) {
      e.At(at(i, "listen"), FieldName(where, "listen"),
           "'" + all[i].listen + "' takes the port of http.listen, '" + config.http_listen + "'");
    }
  }
}

void ParseRoot(ConfigErrors& e, const SourceTypes& types, const YAML::Node& root,
               DaemonConfig* out) {
  if (!root.IsDefined() || root.IsNull()) {
    e.Add(e.format.ErrorAt(1, "sources", "empty config: at least one source is needed"));
    return;
  }
  e.Add(CheckDuplicateKeys(e.format, root));
  e.Add(CheckKeys(e.format, root, "",
                  {"rules", "sources", "checkpoint_dir", "checkpoint_interval", "http", "incidents",
                   "alertmanager", "correlation", "log", "tailer", "limits", "redaction"}));
  if (!root.IsMap()) return;
  e.Add(GetString(e.format, root, "", "rules", false, &out->rules_dir));

  YAML::Node sources = root["sources"];
  if (!sources.IsDefined() || sources.IsNull()) {
    e.At(root, "sources", "missing required key");
  } else if (!sources.IsSequence() || sources.size() == 0) {
    e.At(sources, "sources", "expected a non-empty list of sources");
  } else {
    for (size_t i = 0; i < sources.size(); ++i) {
      SourceConfig source;
      ParseSource(e, types, sources[i], "sources[" + std::to_string(i) + "]", &source);
      out->sources.push_back(std::move(source));
    }
  }

  e.Add(GetString(e.format, root, "", "checkpoint_dir", false, &out->checkpoint_dir));
  e.Add(GetDuration(e.format, root, "", "checkpoint_interval", &out->checkpoint_interval_us));
  for (size_t i = 0; i < out->sources.size(); ++i) {
    if (out->sources[i].release_read_bytes && out->checkpoint_dir.empty()) {
      const std::string where = "sources[" + std::to_string(i) + "]";
      e.At(sources[i]["release_read_bytes"], FieldName(where, "release_read_bytes"),
           "needs a checkpoint_dir: bytes are released once a checkpoint has committed them");
    }
  }
  ParseHttp(e, root, out);
  CheckClashes(e, sources, *out);
  YAML::Node incidents;
  ParseSection(e, root, "incidents", {"path", "gone_after", "max_age"}, &incidents);
  if (incidents.IsMap()) {
    // Optional: the reference's `path: "-"` is the default (DaemonConfig).
    e.Add(GetString(e.format, incidents, "incidents", "path", false, &out->incidents_path));
    if (YAML::Node path = incidents["path"]; path.IsScalar() && path.Scalar().empty()) {
      e.At(path, "incidents.path", "must not be empty: \"-\" (stdout) or a file");
    }
    e.Add(
        GetDuration(e.format, incidents, "incidents", "gone_after", &out->incidents_gone_after_us));
    // max_age: 0 = incidents never expire.
    if (YAML::Node max_age = incidents["max_age"]; max_age.IsScalar() && max_age.Scalar() == "0") {
      out->incidents_max_age_us = 0;
    } else {
      e.Add(GetDuration(e.format, incidents, "incidents", "max_age", &out->incidents_max_age_us));
    }
  }
  ParseAlertmanager(e, root, &out->alertmanager);
  YAML::Node correlation;
  ParseSection(e, root, "correlation", {"window"}, &correlation);
  if (correlation.IsMap()) {
    e.Add(GetDuration(e.format, correlation, "correlation", "window", &out->correlation_window_us));
  }
  ParseLog(e, root, out);
  ParseTailer(e, root, &out->tailer);
  ParseLimits(e, root, &out->limits);
  ParseRedaction(e, root, &out->redaction);
}

}  // namespace

SourceSection::SourceSection(ConfigErrors& errors, const YAML::Node& node, std::string where)
    : errors_(errors), node_(node), where_(std::move(where)) {}

void SourceSection::Keys(std::initializer_list<std::string_view> allowed) {
  errors_.Add(CheckKeys(errors_.format, node_, where_, allowed));
}
bool SourceSection::String(std::string_view key, bool required, std::string* out) {
  return errors_.Add(GetString(errors_.format, node_, where_, key, required, out));
}
void SourceSection::Bool(std::string_view key, bool* out) {
  errors_.Add(GetBool(errors_.format, node_, where_, key, out));
}
void SourceSection::Duration(std::string_view key, int64_t* out_us) {
  errors_.Add(GetDuration(errors_.format, node_, where_, key, out_us));
}
void SourceSection::StringList(std::string_view key, bool required, std::vector<std::string>* out) {
  errors_.Add(GetStringList(errors_.format, node_, where_, key, required, out));
}
void SourceSection::StringMap(std::string_view key, std::map<std::string, std::string>* out) {
  errors_.Add(GetStringMap(errors_.format, node_, where_, key, out));
}
void SourceSection::AtLeast(std::string_view key, uint64_t min, uint64_t max, uint64_t* out) {
  GetAtLeast(errors_, node_, where_, key, min, max, out);
}
void SourceSection::Positive(std::string_view key, uint64_t max, uint64_t* out) {
  GetPositive(errors_, node_, where_, key, max, out);
}
std::string SourceSection::Scalar(std::string_view key) const {
  const YAML::Node value = node_[std::string(key)];
  return value.IsDefined() && value.IsScalar() ? value.Scalar() : "";
}
bool SourceSection::Has(std::string_view key) const {
  const YAML::Node value = node_[std::string(key)];
  return value.IsDefined() && !value.IsNull();
}
void SourceSection::Error(std::string_view key, std::string_view reason) {
  errors_.At(node_[std::string(key)], FieldName(where_, key), reason);
}
void SourceSection::Labels(std::map<std::string, std::string>* out) {
  ParseLabels(errors_, node_, where_, out);
}
void SourceSection::DeploymentFrom(std::string* out) {
  ParseDeploymentFrom(errors_, node_, where_, out);
}
void SourceSection::Format(parse::Envelope* out) {
  std::string format = "auto";
  String("format", false, &format);
  if (!parse::ParseEnvelopeName(format, out)) {
    Error("format", "expected auto, plain, cri, docker, journald or compose, got '" + format + "'");
  }
}

void SourceTypes::Add(std::string name, SourceType type, SourceSchema schema) {
  entries_.push_back({std::move(name), type, schema});
}
const SourceTypes::Entry* SourceTypes::Find(std::string_view name) const {
  for (const Entry& entry : entries_) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}
std::string SourceTypes::Names() const {
  std::string names;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (i > 0) names += i + 1 == entries_.size() ? " or " : ", ";
    names += entries_[i].name;
  }
  return names;
}

std::vector<RedactionPattern> RedactionConfig::All() const {
  std::vector<RedactionPattern> all;
  if (defaults) all = Redactor::Defaults();
  all.insert(all.end(), patterns.begin(), patterns.end());
  return all;
}

Pipeline::Options PipelineOptionsFor(const DaemonConfig& config) {
  const LimitsConfig& limits = config.limits;
  Pipeline::Options options;
  options.correlator.window_us = config.correlation_window_us;  // 0: each rule's own
  options.correlator.gone_after_us = config.incidents_gone_after_us;
  options.correlator.max_age_us = config.incidents_max_age_us;
  options.correlator.max_open_incidents = limits.max_open_incidents;
  options.max_held_events = limits.max_held_events;
  options.max_hold_us = limits.max_hold_us;
  options.engine.pending_timeout_us = limits.symptom_timeout_us;
  options.partial_line_timeout_us = config.tailer.partial_line_timeout_us;
  options.source_limits = SourceLimits{
      .max_process_streams = limits.max_process_streams,
      .max_traceback_frames = limits.max_traceback_frames,
      .max_traceback_bytes = limits.max_traceback_bytes,
      .traceback_timeout_us = limits.traceback_timeout_us,
  };
  return options;
}

StatusOr<DaemonConfig> ParseConfig(const std::string& file, const std::string& text,
                                   const SourceTypes& types) {
  ConfigErrors errors(file);
  YAML::Node root;
  if (Status s = yaml_strict::ParseYamlText(errors.format, text, &root); !s.ok()) return s;
  DaemonConfig config;
  config.file = file;
  try {
    errors.Add(yaml_strict::CheckUnterminatedQuotes(errors.format, text, root));
    ParseRoot(errors, types, root, &config);
  } catch (const YAML::Exception& e) {
    errors.Add(yaml_strict::ExceptionError(errors.format, text, e));
  }
  if (Status s = errors.list.ToStatus(); !s.ok()) return s;
  return config;
}

StatusOr<DaemonConfig> LoadConfigFile(const std::string& path, const SourceTypes& types) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseConfig(path, text.str(), types);
}

StatusOr<std::map<std::string, std::string>> ParseLabelFlags(
    const std::vector<std::string>& labels) {
  std::map<std::string, std::string> out;
  for (const std::string& label : labels) {
    const size_t eq = label.find('=');
    const std::string key = label.substr(0, eq);
    std::string problem;
    if (eq == std::string::npos) {
      problem = "expected key=value, got '" + label + "'";
    } else if (!RE2::FullMatch(key, LabelName())) {
      problem = "'" + key + "' in '" + label +
                "' is not a label name (letters, digits and _, not starting with a digit)";
    } else if (eq + 1 == label.size()) {
      problem = "'" + label + "' has an empty value";
    } else if (out.count(key) != 0) {
      problem = "'" + key + "' given twice ('" + key + "=" + out.at(key) + "', '" + label + "')";
    }
    if (!problem.empty()) return InvalidArgumentError("--label: " + problem);
    out[key] = label.substr(eq + 1);
  }
  return out;
}

void ApplyLabels(const std::map<std::string, std::string>& labels, DaemonConfig* config) {
  for (SourceConfig& source : config->sources) {
    for (const auto& [key, value] : labels) source.labels[key] = value;
  }
  config->command_line_labels = labels;
}

StatusOr<DaemonConfig> ConfigFromFlags(const RunFlags& flags) {
  DaemonConfig config;
  config.rules_dir = flags.rules_dir;
  config.checkpoint_dir = flags.checkpoint_dir;
  if (!flags.http.empty()) {
    if (Status s = CheckListenAddress(flags.http); !s.ok()) {
      return InvalidArgumentError("--http: " + s.message());
    }
    // Beyond loopback, the token file comes with it (as http.auth_token_file).
    config.http_listen = flags.http;
    config.http_allow_remote = !CheckLoopbackOrAllowed(flags.http, false).ok();
    config.http_auth_token_file = flags.http_token_file;
    if (config.http_allow_remote && flags.http_token_file.empty()) {
      return InvalidArgumentError("--http: '" + flags.http +
                                  "' listens beyond loopback: give --http-token-file FILE too (the "
                                  "bearer token clients must present)");
    }
  }
  config.incidents_path = flags.incidents.empty() ? "-" : flags.incidents;
  SourceConfig source;
  if (flags.paths.empty()) return InvalidArgumentError("PATH-OR-GLOB: at least one is needed");
  bool stdin_path = false;
  for (const std::string& path : flags.paths) {
    if (path == "-") {
      stdin_path = true;
    } else if (path.empty()) {
      return InvalidArgumentError("PATH-OR-GLOB: empty path");
    }
  }
  if (stdin_path && flags.paths.size() > 1) {
    return InvalidArgumentError("PATH-OR-GLOB: '-' (stdin) cannot be mixed with files");
  }
  source.type = stdin_path ? SourceType::kStdin : SourceType::kFile;
  if (!stdin_path) source.paths = flags.paths;
  auto labels = ParseLabelFlags(flags.labels);
  if (!labels.ok()) return labels.status();
  source.labels = std::move(*labels);
  if (!flags.deployment_from.empty()) {
    std::string problem = DeploymentFromProblem(flags.deployment_from);
    if (!problem.empty()) return InvalidArgumentError("--deployment-from: " + problem);
    source.deployment_from = flags.deployment_from;
  }
  if (flags.start_at == "end") {
    source.start_at = StartAt::kEnd;
  } else if (flags.start_at == "beginning") {
    source.start_at = StartAt::kBeginning;
  } else {
    return InvalidArgumentError("--start-at: expected end or beginning, got '" + flags.start_at +
                                "'");
  }
  if (!parse::ParseEnvelopeName(flags.format, &source.format)) {
    return InvalidArgumentError(
        "--input-format: expected auto, plain, cri, docker, journald or compose");
  }
  config.sources.push_back(std::move(source));
  return config;
}

}  // namespace fingerprintd::config
