// The `type: tcp`, `type: unix` and `type: stdin` sections
// (source/source_schemas.h): lines or JSON records from a stream.
#include <re2/re2.h>

#include "source/socket_framing.h"
#include "source/source_schemas.h"

namespace fingerprintd::source {
namespace {

// The keys tcp, unix and stdin share (framing, limits, jsonl fields); the
// caller checked which keys its type allows.
void ReadStreamKeys(config::SourceSection& section, config::SourceConfig* out) {
  section.String("framing", false, &out->framing);
  if (out->framing != "lines" && out->framing != "jsonl") {
    section.Error("framing", "expected lines or jsonl, got '" + out->framing + "'");
  }
  section.Labels(&out->labels);
  section.Positive("max_connections", 1'000'000, &out->max_connections);
  section.Duration("idle_timeout", &out->idle_timeout_us);
  section.AtLeast("max_line_bytes", 1024, config::kMaxLineBytesCap, &out->max_line_bytes);
  section.Positive("max_streams", 1'000'000, &out->max_streams);
  section.StringList("text_fields", false, &out->text_fields);
  section.StringMap("label_fields", &out->label_fields);
  StreamLabel label;
  for (const auto& [key, field] : out->label_fields) {
    if (!ParseStreamLabel(key, &label)) {
      section.Error(
          "label_fields",
          "unknown label '" + key + "' (deployment, namespace, pod, container, file or stream)");
    }
  }
  section.String("deployment_field", false, &out->deployment_field);
  if (!ParseStreamLabel(out->deployment_field, &label) || label == StreamLabel::kDeployment) {
    section.Error("deployment_field", "expected namespace, pod, container, file or stream, got '" +
                                          out->deployment_field + "'");
  }
  section.DeploymentFrom(&out->deployment_from);
}

}  // namespace

void ReadTcpSourceSection(config::SourceSection& section, config::SourceConfig* out) {
  section.Keys({"type", "listen", "allow_remote", "framing", "labels", "max_connections",
                "idle_timeout", "max_line_bytes", "max_streams", "text_fields", "label_fields",
                "deployment_from", "deployment_field"});
  out->listen = "127.0.0.1:5170";
  section.String("listen", false, &out->listen);
  section.Bool("allow_remote", &out->allow_remote);
  Status s = config::CheckListenAddress(out->listen);
  if (s.ok()) s = config::CheckLoopbackOrAllowed(out->listen, out->allow_remote);
  if (!s.ok()) section.Error("listen", s.message());
  ReadStreamKeys(section, out);
}

void ReadUnixSourceSection(config::SourceSection& section, config::SourceConfig* out) {
  section.Keys({"type", "path", "mode", "framing", "labels", "max_connections", "idle_timeout",
                "max_line_bytes", "max_streams", "text_fields", "label_fields", "deployment_from",
                "deployment_field"});
  section.String("path", true, &out->path);
  std::string mode;
  section.String("mode", false, &mode);
  if (!mode.empty()) {
    static const RE2 kMode("0?[0-7]{3}");
    if (RE2::FullMatch(mode, kMode)) {
      out->mode = static_cast<uint32_t>(std::stoul(mode, nullptr, 8));
    } else {
      section.Error("mode", "expected an octal file mode such as \"0660\", got '" + mode + "'");
    }
  }
  ReadStreamKeys(section, out);
}

void ReadStdinSourceSection(config::SourceSection& section, config::SourceConfig* out) {
  section.Keys({"type", "format", "framing", "labels", "max_line_bytes", "text_fields",
                "label_fields", "deployment_from", "deployment_field"});
  section.Format(&out->format);
  ReadStreamKeys(section, out);
}

}  // namespace fingerprintd::source
