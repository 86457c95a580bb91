#include "parse/docker_json.h"

namespace fingerprintd::parse {

bool DecodeDockerJson(std::string_view line, JsonObjectScanner& scanner, DockerRecord* out) {
  out->log.clear();
  out->stream.clear();
  out->time.clear();
  bool has_log = false;
  struct Found {
    DockerRecord* out;
    bool* has_log;
  } found{out, &has_log};
  // Two pointers captured: the callback fits std::function's inline storage.
  const bool ok = scanner.Scan(line, [f = &found](std::string_view path, const JsonString& value) {
    if (path == "log") {
      f->out->log.clear();
      value.AppendTo(&f->out->log);
      *f->has_log = true;
    } else if (path == "stream") {
      f->out->stream.clear();
      value.AppendTo(&f->out->stream);
    } else if (path == "time") {
      f->out->time.clear();
      value.AppendTo(&f->out->time);
    }
  });
  return ok && has_log;
}

}  // namespace fingerprintd::parse
