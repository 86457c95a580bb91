// The config adapter: yaml-cpp through common/yaml_strict, all-or-nothing,
// every error `file:line: key: reason`.
#include "config/config.h"

#include <re2/re2.h>

#include <fstream>
#include <sstream>

#include "common/re2_limits.h"
#include "common/yaml_strict.h"
#include "fingerprintd/source.h"
#include "http/http_server.h"
#include "sink/alertmanager.h"
#include "source/socket_framing.h"

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
  if (allow_remote || (http::SplitHostPort(address, &host, &port) && http::IsLoopbackHost(host))) {
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

namespace {

constexpr uint64_t kMaxLineBytesCap = 256ull << 20;
constexpr uint64_t kMinRetainedBytes = 16ull << 20;

// The config's fixed patterns, compiled once: a parse (every SIGHUP) then
// compiles no regex but the file's own deployment_from.
const RE2& LabelName() {
  static const RE2 re("[A-Za-z_][A-Za-z0-9_]*");
  return re;
}

Status CheckLabelKey(const YamlErrors& errors, const YAML::Node& node, const std::string& field,
                     const std::string& key) {
  if (!RE2::FullMatch(key, LabelName())) {
    return errors.Error(node, field, "label name '" + key + "' must match [A-Za-z_][A-Za-z0-9_]*");
  }
  return OkStatus();
}

// An RE2 with at least one capture group (they name the deployment).
std::string DeploymentFromProblem(const std::string& pattern) {
  RE2 re(pattern, BoundedRe2Options());
  if (std::string problem = Re2Problem(re); !problem.empty()) return problem;
  if (re.NumberOfCapturingGroups() < 1) return "needs a capture group (it names the deployment)";
  return "";
}

// `deployment_from`, optional, for every source type that takes it.
Status ParseDeploymentFrom(const YamlErrors& errors, const YAML::Node& node,
                           const std::string& where, SourceConfig* out) {
  if (Status s = GetString(errors, node, where, "deployment_from", false, &out->deployment_from);
      !s.ok())
    return s;
  if (!out->deployment_from.empty()) {
    std::string problem = DeploymentFromProblem(out->deployment_from);
    if (!problem.empty()) {
      return errors.Error(node["deployment_from"], FieldName(where, "deployment_from"), problem);
    }
  }
  return OkStatus();
}

// "268435456", "256Mi", "1Gi", "64Ki" (powers of 1024, as Kubernetes writes
// a sizeLimit) -> bytes; false when it is none of these or overflows.
bool ParseByteSize(const std::string& text, uint64_t* out) {
  static const RE2 kSize(R"(([0-9]{1,19})(Ki|Mi|Gi|Ti)?)");
  uint64_t number = 0;
  std::string unit;
  if (!RE2::FullMatch(text, kSize, &number, &unit)) return false;
  int shift = unit.empty() ? 0 : unit == "Ki" ? 10 : unit == "Mi" ? 20 : unit == "Gi" ? 30 : 40;
  if (number > (UINT64_MAX >> shift)) return false;
  *out = number << shift;
  return true;
}

// release_read_bytes / max_retained_bytes (source/release_policy.h); that a
// checkpoint_dir goes with them is checked with the root's keys.
Status ParseRelease(const YamlErrors& errors, const YAML::Node& node, const std::string& where,
                    SourceConfig* out) {
  if (Status s = GetBool(errors, node, where, "release_read_bytes", &out->release_read_bytes);
      !s.ok())
    return s;
  const YAML::Node bound = node["max_retained_bytes"];
  if (!bound.IsDefined() || bound.IsNull()) return OkStatus();
  const std::string field = FieldName(where, "max_retained_bytes");
  if (!out->release_read_bytes) {
    return errors.Error(bound, field, "only with release_read_bytes: true");
  }
  std::string text = bound.IsScalar() ? bound.Scalar() : "";
  if (!ParseByteSize(text, &out->max_retained_bytes)) {
    return errors.Error(
        bound, field, "expected a size in bytes (e.g. 268435456, 256Mi, 1Gi), got '" + text + "'");
  }
  if (out->max_retained_bytes < kMinRetainedBytes) {
    return errors.Error(bound, field,
                        "must be at least 16Mi (a read of 8 MiB and room for the writer)");
  }
  return OkStatus();
}

Status ParseFileSource(const YamlErrors& errors, const YAML::Node& node, const std::string& where,
                       SourceConfig* out) {
  if (Status s =
          CheckKeys(errors, node, where,
                    {"type", "paths", "exclude", "ignore_older", "format", "start_at", "labels",
                     "deployment_from", "release_read_bytes", "max_retained_bytes"});
      !s.ok())
    return s;
  if (Status s = GetStringList(errors, node, where, "paths", true, &out->paths); !s.ok()) return s;
  for (const std::string& p : out->paths) {
    if (p.empty()) return errors.Error(node["paths"], FieldName(where, "paths"), "empty path");
  }
  if (Status s = GetStringList(errors, node, where, "exclude", false, &out->exclude); !s.ok())
    return s;
  if (Status s = GetDuration(errors, node, where, "ignore_older", &out->ignore_older_us); !s.ok())
    return s;
  std::string format = "auto";
  if (Status s = GetString(errors, node, where, "format", false, &format); !s.ok()) return s;
  if (!parse::ParseEnvelopeName(format, &out->format)) {
    return errors.Error(
        node["format"], FieldName(where, "format"),
        "expected auto, plain, cri, docker, journald or compose, got '" + format + "'");
  }
  std::string start_at = "end";
  if (Status s = GetString(errors, node, where, "start_at", false, &start_at); !s.ok()) return s;
  if (start_at == "end") {
    out->start_at = StartAt::kEnd;
  } else if (start_at == "beginning") {
    out->start_at = StartAt::kBeginning;
  } else {
    return errors.Error(node["start_at"], FieldName(where, "start_at"),
                        "expected end or beginning, got '" + start_at + "'");
  }
  if (Status s = GetStringMap(errors, node, where, "labels", &out->labels); !s.ok()) return s;
  for (const auto& [key, value] : out->labels) {
    if (Status s = CheckLabelKey(errors, node["labels"], FieldName(where, "labels"), key); !s.ok())
      return s;
  }
  if (Status s = ParseRelease(errors, node, where, out); !s.ok()) return s;
  return ParseDeploymentFrom(errors, node, where, out);
}

Status ParseFraming(const YamlErrors& errors, const YAML::Node& node, const std::string& where,
                    SourceConfig* out) {
  if (Status s = GetString(errors, node, where, "framing", false, &out->framing); !s.ok()) return s;
  if (out->framing != "lines" && out->framing != "jsonl") {
    return errors.Error(node["framing"], FieldName(where, "framing"),
                        "expected lines or jsonl, got '" + out->framing + "'");
  }
  return OkStatus();
}

// The keys tcp, unix and stdin sources share (framing, limits, jsonl fields);
// the caller checked which keys its type allows.
Status ParseStreamSource(const YamlErrors& errors, const YAML::Node& node, const std::string& where,
                         SourceConfig* out) {
  if (Status s = ParseFraming(errors, node, where, out); !s.ok()) return s;
  if (Status s = GetStringMap(errors, node, where, "labels", &out->labels); !s.ok()) return s;
  for (const auto& [key, value] : out->labels) {
    if (Status s = CheckLabelKey(errors, node["labels"], FieldName(where, "labels"), key); !s.ok())
      return s;
  }
  if (Status s = GetUint(errors, node, where, "max_connections", 1'000'000, &out->max_connections);
      !s.ok())
    return s;
  if (out->max_connections == 0) {
    return errors.Error(node["max_connections"], FieldName(where, "max_connections"),
                        "must be > 0");
  }
  if (Status s = GetDuration(errors, node, where, "idle_timeout", &out->idle_timeout_us); !s.ok())
    return s;
  if (Status s =
          GetUint(errors, node, where, "max_line_bytes", kMaxLineBytesCap, &out->max_line_bytes);
      !s.ok())
    return s;
  if (out->max_line_bytes < 1024) {
    return errors.Error(node["max_line_bytes"], FieldName(where, "max_line_bytes"),
                        "must be at least 1024");
  }
  if (Status s = GetUint(errors, node, where, "max_streams", 1'000'000, &out->max_streams); !s.ok())
    return s;
  if (out->max_streams == 0) {
    return errors.Error(node["max_streams"], FieldName(where, "max_streams"), "must be > 0");
  }
  if (Status s = GetStringList(errors, node, where, "text_fields", false, &out->text_fields);
      !s.ok())
    return s;
  if (Status s = GetStringMap(errors, node, where, "label_fields", &out->label_fields); !s.ok())
    return s;
  source::StreamLabel label;
  for (const auto& [key, field] : out->label_fields) {
    if (!source::ParseStreamLabel(key, &label)) {
      return errors.Error(
          node["label_fields"], FieldName(where, "label_fields"),
          "unknown label '" + key + "' (deployment, namespace, pod, container, file or stream)");
    }
  }
  if (Status s = GetString(errors, node, where, "deployment_field", false, &out->deployment_field);
      !s.ok())
    return s;
  if (!source::ParseStreamLabel(out->deployment_field, &label) ||
      label == source::StreamLabel::kDeployment) {
    return errors.Error(
        node["deployment_field"], FieldName(where, "deployment_field"),
        "expected namespace, pod, container, file or stream, got '" + out->deployment_field + "'");
  }
  return ParseDeploymentFrom(errors, node, where, out);
}

Status ParseSource(const YamlErrors& errors, const YAML::Node& node, const std::string& where,
                   SourceConfig* out) {
  if (!node.IsMap()) return errors.Error(node, where, "expected a mapping");
  out->line = node.Mark().line + 1;
  std::string type;
  if (Status s = GetString(errors, node, where, "type", true, &type); !s.ok()) return s;
  if (type == "file") {
    out->type = SourceType::kFile;
    return ParseFileSource(errors, node, where, out);
  }
  if (type == "tcp") {
    out->type = SourceType::kTcp;
    if (Status s =
            CheckKeys(errors, node, where,
                      {"type", "listen", "allow_remote", "framing", "labels", "max_connections",
                       "idle_timeout", "max_line_bytes", "max_streams", "text_fields",
                       "label_fields", "deployment_from", "deployment_field"});
        !s.ok())
      return s;
    out->listen = "127.0.0.1:5170";
    if (Status s = GetString(errors, node, where, "listen", false, &out->listen); !s.ok()) return s;
    if (Status s = GetBool(errors, node, where, "allow_remote", &out->allow_remote); !s.ok())
      return s;
    if (Status s = CheckListenAddress(out->listen); !s.ok()) {
      return errors.Error(node["listen"], FieldName(where, "listen"), s.message());
    }
    if (Status s = CheckLoopbackOrAllowed(out->listen, out->allow_remote); !s.ok()) {
      return errors.Error(node["listen"], FieldName(where, "listen"), s.message());
    }
    return ParseStreamSource(errors, node, where, out);
  }
  if (type == "unix") {
    out->type = SourceType::kUnix;
    if (Status s = CheckKeys(errors, node, where,
                             {"type", "path", "mode", "framing", "labels", "max_connections",
                              "idle_timeout", "max_line_bytes", "max_streams", "text_fields",
                              "label_fields", "deployment_from", "deployment_field"});
        !s.ok())
      return s;
    if (Status s = GetString(errors, node, where, "path", true, &out->path); !s.ok()) return s;
    if (out->path.empty())
      return errors.Error(node["path"], FieldName(where, "path"), "empty path");
    std::string mode;
    if (Status s = GetString(errors, node, where, "mode", false, &mode); !s.ok()) return s;
    if (!mode.empty()) {
      static const RE2 kMode("0?[0-7]{3}");
      if (!RE2::FullMatch(mode, kMode)) {
        return errors.Error(node["mode"], FieldName(where, "mode"),
                            "expected an octal file mode such as \"0660\", got '" + mode + "'");
      }
      out->mode = static_cast<uint32_t>(std::stoul(mode, nullptr, 8));
    }
    return ParseStreamSource(errors, node, where, out);
  }
  if (type == "stdin") {
    out->type = SourceType::kStdin;
    if (Status s =
            CheckKeys(errors, node, where,
                      {"type", "format", "framing", "labels", "max_line_bytes", "text_fields",
                       "label_fields", "deployment_from", "deployment_field"});
        !s.ok())
      return s;
    std::string format = "auto";
    if (Status s = GetString(errors, node, where, "format", false, &format); !s.ok()) return s;
    if (!parse::ParseEnvelopeName(format, &out->format)) {
      return errors.Error(node["format"], FieldName(where, "format"),
                          "expected auto, plain, cri, docker, journald or compose");
    }
    return ParseStreamSource(errors, node, where, out);
  }
  return errors.Error(node["type"], FieldName(where, "type"),
                      "expected file, tcp, unix or stdin, got '" + type + "'");
}

// Reads `key: {sub: scalar}` sections such as `http: {listen: ...}`; *out is
// left null (IsMap() false) when the section is absent.
Status ParseSection(const YamlErrors& errors, const YAML::Node& root, const std::string& key,
                    std::initializer_list<std::string_view> allowed, YAML::Node* out) {
  YAML::Node node = root[key];
  if (!node.IsDefined() || node.IsNull()) return OkStatus();
  if (Status s = CheckKeys(errors, node, key, allowed); !s.ok()) return s;
  *out = node;
  return OkStatus();
}

Status ParseTailer(const YamlErrors& errors, const YAML::Node& root, TailerConfig* out) {
  YAML::Node node;
  if (Status s =
          ParseSection(errors, root, "tailer",
                       {"inotify", "poll_interval", "rescan_interval", "safety_rescan_interval",
                        "partial_line_timeout", "max_line_bytes", "max_files"},
                       &node);
      !s.ok())
    return s;
  if (!node.IsMap()) return OkStatus();
  if (Status s = GetBool(errors, node, "tailer", "inotify", &out->inotify); !s.ok()) return s;
  if (Status s = GetDuration(errors, node, "tailer", "poll_interval", &out->poll_interval_us);
      !s.ok())
    return s;
  if (Status s = GetDuration(errors, node, "tailer", "rescan_interval", &out->rescan_interval_us);
      !s.ok())
    return s;
  if (Status s = GetDuration(errors, node, "tailer", "safety_rescan_interval",
                             &out->safety_rescan_interval_us);
      !s.ok())
    return s;
  if (Status s = GetDuration(errors, node, "tailer", "partial_line_timeout",
                             &out->partial_line_timeout_us);
      !s.ok())
    return s;
  if (Status s =
          GetUint(errors, node, "tailer", "max_line_bytes", kMaxLineBytesCap, &out->max_line_bytes);
      !s.ok())
    return s;
  if (out->max_line_bytes < 1024) {
    return errors.Error(node["max_line_bytes"], "tailer.max_line_bytes", "must be at least 1024");
  }
  if (Status s = GetUint(errors, node, "tailer", "max_files", 1'000'000, &out->max_files); !s.ok())
    return s;
  if (out->max_files == 0)
    return errors.Error(node["max_files"], "tailer.max_files", "must be > 0");
  return OkStatus();
}

// A `limits:` count: an integer from `min` to `max`.
Status GetCount(const YamlErrors& errors, const YAML::Node& node, std::string_view key,
                uint64_t min, uint64_t max, uint64_t* out) {
  if (Status s = GetUint(errors, node, "limits", key, max, out); !s.ok()) return s;
  if (*out < min) {
    return errors.Error(node[std::string(key)], FieldName("limits", key),
                        "must be at least " + std::to_string(min));
  }
  return OkStatus();
}

Status ParseLimits(const YamlErrors& errors, const YAML::Node& root, LimitsConfig* out) {
  YAML::Node node;
  if (Status s = ParseSection(
          errors, root, "limits",
          {"max_open_incidents", "max_held_events", "max_hold", "max_process_streams",
           "max_traceback_frames", "max_traceback_bytes", "traceback_timeout", "symptom_timeout"},
          &node);
      !s.ok())
    return s;
  if (!node.IsMap()) return OkStatus();
  if (Status s =
          GetCount(errors, node, "max_open_incidents", 1, 1'000'000, &out->max_open_incidents);
      !s.ok())
    return s;
  if (Status s = GetCount(errors, node, "max_held_events", 1, 10'000'000, &out->max_held_events);
      !s.ok())
    return s;
  if (Status s = GetDuration(errors, node, "limits", "max_hold", &out->max_hold_us); !s.ok())
    return s;
  if (Status s =
          GetCount(errors, node, "max_process_streams", 1, 1'000'000, &out->max_process_streams);
      !s.ok())
    return s;
  // The assembler keeps a quarter of the frame cap at the head: at least one.
  if (Status s =
          GetCount(errors, node, "max_traceback_frames", 4, 100'000, &out->max_traceback_frames);
      !s.ok())
    return s;
  if (Status s = GetCount(errors, node, "max_traceback_bytes", 1024, kMaxLineBytesCap,
                          &out->max_traceback_bytes);
      !s.ok())
    return s;
  if (Status s =
          GetDuration(errors, node, "limits", "traceback_timeout", &out->traceback_timeout_us);
      !s.ok())
    return s;
  return GetDuration(errors, node, "limits", "symptom_timeout", &out->symptom_timeout_us);
}

Status ParseAlertmanager(const YamlErrors& errors, const YAML::Node& root,
                         AlertmanagerConfig* out) {
  YAML::Node node;
  if (Status s = ParseSection(errors, root, "alertmanager",
                              {"url", "labels", "resend_interval", "timeout", "queue_size"}, &node);
      !s.ok())
    return s;
  if (!node.IsMap()) return OkStatus();
  if (Status s = GetString(errors, node, "alertmanager", "url", true, &out->url); !s.ok()) return s;
  if (auto url = sink::ParseAlertmanagerUrl(out->url); !url.ok()) {
    return errors.Error(node["url"], "alertmanager.url", url.status().message());
  }
  if (Status s = GetStringMap(errors, node, "alertmanager", "labels", &out->labels); !s.ok())
    return s;
  for (const auto& [key, value] : out->labels) {
    if (Status s = CheckLabelKey(errors, node["labels"], "alertmanager.labels", key); !s.ok())
      return s;
    static const RE2 kBuiltIn("alertname|rule|class|severity|confidence|deployment|incident_id");
    if (RE2::FullMatch(key, kBuiltIn)) {
      return errors.Error(node["labels"], "alertmanager.labels",
                          "label '" + key + "' is set by fingerprintd on every alert");
    }
  }
  if (Status s =
          GetDuration(errors, node, "alertmanager", "resend_interval", &out->resend_interval_us);
      !s.ok())
    return s;
  if (Status s = GetDuration(errors, node, "alertmanager", "timeout", &out->timeout_us); !s.ok())
    return s;
  if (Status s = GetUint(errors, node, "alertmanager", "queue_size", 1'000'000, &out->queue_size);
      !s.ok())
    return s;
  if (out->queue_size == 0) {
    return errors.Error(node["queue_size"], "alertmanager.queue_size", "must be > 0");
  }
  return OkStatus();
}

Status ParseRoot(const YamlErrors& errors, const YAML::Node& root, DaemonConfig* out) {
  if (!root.IsDefined() || root.IsNull()) {
    return errors.ErrorAt(1, "sources", "empty config: at least one source is needed");
  }
  if (Status s = CheckKeys(errors, root, "",
                           {"rules", "sources", "checkpoint_dir", "checkpoint_interval", "http",
                            "incidents", "alertmanager", "correlation", "log", "tailer", "limits"});
      !s.ok())
    return s;
  if (Status s = GetString(errors, root, "", "rules", false, &out->rules_dir); !s.ok()) return s;

  YAML::Node sources = root["sources"];
  if (!sources.IsDefined() || sources.IsNull()) {
    return errors.Error(root, "sources", "missing required key");
  }
  if (!sources.IsSequence() || sources.size() == 0) {
    return errors.Error(sources, "sources", "expected a non-empty list of sources");
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    SourceConfig source;
    if (Status s = ParseSource(errors, sources[i], "sources[" + std::to_string(i) + "]", &source);
        !s.ok())
      return s;
    out->sources.push_back(std::move(source));
  }

  if (Status s = GetString(errors, root, "", "checkpoint_dir", false, &out->checkpoint_dir);
      !s.ok())
    return s;
  if (Status s = GetDuration(errors, root, "", "checkpoint_interval", &out->checkpoint_interval_us);
      !s.ok())
    return s;
  for (size_t i = 0; i < out->sources.size(); ++i) {
    if (out->sources[i].release_read_bytes && out->checkpoint_dir.empty()) {
      const std::string where = "sources[" + std::to_string(i) + "]";
      return errors.Error(sources[i]["release_read_bytes"], FieldName(where, "release_read_bytes"),
                          "needs a checkpoint_dir: bytes are released once a checkpoint has "
                          "committed them");
    }
  }

  // One fresh Node per section: assigning to a bound YAML::Node would
  // overwrite the node it refers to inside the tree.
  YAML::Node http;
  if (Status s =
          ParseSection(errors, root, "http",
                       {"listen", "allow_remote", "history_max_closed", "history_max_age"}, &http);
      !s.ok())
    return s;
  if (http.IsMap()) {
    if (Status s = GetString(errors, http, "http", "listen", false, &out->http_listen); !s.ok())
      return s;
    if (Status s = GetBool(errors, http, "http", "allow_remote", &out->http_allow_remote); !s.ok())
      return s;
    if (Status s = GetUint(errors, http, "http", "history_max_closed", 1'000'000,
                           &out->http_history_max_closed);
        !s.ok())
      return s;
    if (Status s =
            GetDuration(errors, http, "http", "history_max_age", &out->http_history_max_age_us);
        !s.ok())
      return s;
    if (Status s = CheckListenAddress(out->http_listen); !s.ok()) {
      return errors.Error(http["listen"], "http.listen", s.message());
    }
    if (Status s = CheckLoopbackOrAllowed(out->http_listen, out->http_allow_remote); !s.ok()) {
      return errors.Error(http["listen"], "http.listen", s.message());
    }
  }
  YAML::Node incidents;
  if (Status s = ParseSection(errors, root, "incidents", {"path"}, &incidents); !s.ok()) return s;
  if (incidents.IsMap()) {
    if (Status s = GetString(errors, incidents, "incidents", "path", true, &out->incidents_path);
        !s.ok())
      return s;
  }
  if (Status s = ParseAlertmanager(errors, root, &out->alertmanager); !s.ok()) return s;
  YAML::Node correlation;
  if (Status s = ParseSection(errors, root, "correlation", {"window"}, &correlation); !s.ok())
    return s;
  if (correlation.IsMap()) {
    if (Status s =
            GetDuration(errors, correlation, "correlation", "window", &out->correlation_window_us);
        !s.ok())
      return s;
  }
  YAML::Node log;
  if (Status s = ParseSection(errors, root, "log", {"level", "format"}, &log); !s.ok()) return s;
  if (log.IsMap()) {
    if (Status s = GetString(errors, log, "log", "level", false, &out->log_level); !s.ok())
      return s;
    static const RE2 kLevel("trace|debug|info|warn|error|critical|off");
    if (!RE2::FullMatch(out->log_level, kLevel)) {
      return errors.Error(log["level"], "log.level",
                          "expected trace, debug, info, warn, error, critical or off");
    }
    if (Status s = GetString(errors, log, "log", "format", false, &out->log_format); !s.ok())
      return s;
    if (out->log_format != "text" && out->log_format != "json") {
      return errors.Error(log["format"], "log.format", "expected text or json");
    }
  }
  if (Status s = ParseTailer(errors, root, &out->tailer); !s.ok()) return s;
  return ParseLimits(errors, root, &out->limits);
}

}  // namespace

Pipeline::Options PipelineOptionsFor(const DaemonConfig& config) {
  const LimitsConfig& limits = config.limits;
  Pipeline::Options options;
  options.correlator.window_us = config.correlation_window_us;  // 0: each rule's own
  options.correlator.max_open_incidents = limits.max_open_incidents;
  options.max_held_events = limits.max_held_events;
  options.max_hold_us = limits.max_hold_us;
  options.engine.pending_timeout_us = limits.symptom_timeout_us;
  options.source_limits = SourceLimits{
      .max_process_streams = limits.max_process_streams,
      .max_traceback_frames = limits.max_traceback_frames,
      .max_traceback_bytes = limits.max_traceback_bytes,
      .traceback_timeout_us = limits.traceback_timeout_us,
  };
  return options;
}

StatusOr<DaemonConfig> ParseConfig(const std::string& file, const std::string& text) {
  YamlErrors errors(file);
  YAML::Node root;
  if (Status s = yaml_strict::ParseYamlText(errors, text, &root); !s.ok()) return s;
  DaemonConfig config;
  config.file = file;
  try {
    if (Status s = ParseRoot(errors, root, &config); !s.ok()) return s;
  } catch (const YAML::Exception& e) {
    return errors.ErrorAt(e.mark.line + 1, "yaml", e.msg);
  }
  return config;
}

StatusOr<DaemonConfig> LoadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  return ParseConfig(path, text.str());
}

StatusOr<std::map<std::string, std::string>> ParseLabelFlags(
    const std::vector<std::string>& labels) {
  std::map<std::string, std::string> out;
  for (const std::string& label : labels) {
    size_t eq = label.find('=');
    std::string key = label.substr(0, eq);
    if (eq == std::string::npos || !RE2::FullMatch(key, LabelName())) {
      return InvalidArgumentError("--label: expected key=value, got '" + label + "'");
    }
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
    // A flag typed by hand is explicit enough: `--http 0.0.0.0:9464` is allowed.
    config.http_listen = flags.http;
    config.http_allow_remote = true;
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
