// The daemon's configuration: `fingerprintd run --config FILE`, the one-source
// form `fingerprintd run [flags] PATH-OR-GLOB...`, and `fingerprintd config
// check FILE`. DESIGN.md §6 lists the keys that are the contract; the extra
// keys below (log, tailer, checkpoint_interval) are ours.
//
//   rules: /etc/fingerprintd/rules        # default: the pack embedded in the binary
//   sources:
//     - type: file                         # file | tcp | unix | stdin
//       paths: ["/var/log/pods/*/vllm/*.log"]   # globs; `**` crosses directories
//       exclude: ["*.gz"]                  # globs on the whole path or the file name
//       ignore_older: 24h                  # files not modified for this long are not opened
//       format: auto                       # auto | plain | cri | docker | journald | compose
//       start_at: end                      # end | beginning, for files never seen before
//       labels: {deployment: llama-70b}    # static labels
//       deployment_from: '^/var/log/pods/([^_]+)_([^_]+)_'   # <namespace>/<pod>; README:
//                                          # <namespace>/<workload> for multi-pod ones
//       release_read_bytes: false          # true: release the disk blocks of what was read
//                                          # and checkpointed (fallocate PUNCH_HOLE; the file
//                                          # keeps its size, the writer is not disturbed);
//                                          # needs checkpoint_dir and a file system that punches
//                                          # holes (ext4, xfs, btrfs, tmpfs), else an error
//                                          # naming the file (release_failures_total)
//       max_retained_bytes: 256Mi          # with it: each file's allocated bytes stay under
//                                          # this while the daemon keeps up (>= 16Mi; lines the
//                                          # pipeline holds further back are released anyway,
//                                          # evictions_total{what="retained_bytes"})
//     - type: tcp                          # source/socket_source_schema.cc
//       listen: 127.0.0.1:5170             # default 127.0.0.1:5170
//       allow_remote: false                # true: a non-loopback listen address is allowed
//       framing: lines                     # lines | jsonl
//       labels: {deployment: llama-70b}    # static labels
//       max_connections: 1024              # beyond: refused, counted
//       idle_timeout: 5m                   # a connection without a byte, a stream without a
//                                          # line, for this long is closed / ended
//       max_line_bytes: 1048576            # longer lines are truncated and counted
//       max_streams: 1024                  # streams per connection; beyond: the oldest ends
//       text_fields: [log, message]        # jsonl: the log text, first present wins
//       label_fields: {pod: kubernetes.pod_name}   # jsonl: a label's field (dotted path);
//                                          # labels: deployment namespace pod container file stream
//       deployment_from: '^(.+)-[0-9a-f]+-[0-9a-z]{5}$'   # jsonl: captures over deployment_field
//       deployment_field: pod              # namespace | pod | container | file
//     - type: unix                         # the same keys, path instead of listen
//       path: /run/fingerprintd/ingest.sock   # a stale socket file is replaced; removed on stop
//       mode: "0660"                       # the socket file's mode
//       framing: jsonl
//     - type: stdin                        # `fingerprintd run -`: format, labels, framing,
//       format: auto                       # max_line_bytes and the jsonl keys; its end stops
//                                          # the daemon when it is the only source
//   checkpoint_dir: /var/lib/fingerprintd   # default: none (no checkpoints; warned)
//   checkpoint_interval: 5s
//   http:
//     listen: 127.0.0.1:9464               # + allow_remote: true to listen beyond loopback,
//                                          # which needs auth_token_file
//     auth_token_file: /etc/fingerprintd-secret/token   # a bearer token (a Kubernetes Secret)
//                                          # for every path but /healthz, /readyz (and
//     metrics_auth: false                  # /metrics unless true); read at start and reload
//     history_max_closed: 500              # closed incidents /incidents and the status page
//                                          # keep, oldest closed dropped (incident_history)
//     history_max_age: 24h                 # and for at most this long after their last hit
//   incidents:
//     path: "-"                            # "-" = stdout, else a JSONL file (appended)
//     gone_after: 10m                      # every source of a deployment removed this long:
//                                          # its open incidents close (gone)
//     max_age: 24h                         # no new occurrence this long: closed (expired);
//                                          # 0 = never
//   alertmanager:                          # optional: incidents pushed as alerts
//     url: http://127.0.0.1:9093           # http:// or https://; POSTs go to <url>/api/v2/alerts
//     tls_config:                          # https only; every key optional
//       ca_file: /etc/fingerprintd-am/ca.crt   # default: the system's CAs
//       cert_file: /etc/fingerprintd-am/tls.crt  # a client certificate (mutual TLS),
//       key_file: /etc/fingerprintd-am/tls.key   # with its key
//       server_name: am.monitoring         # default: the url's host
//     basic_auth: {username: fp, password_file: /etc/fingerprintd-am/password}
//     bearer_token_file: /etc/fingerprintd-am/token   # or a bearer token; never both
//                                          # (secrets read at each POST: a rotated one is taken up)
//     labels: {cluster: prod}              # static labels on every alert
//     resend_interval: 1m                  # open incidents are re-sent this often
//     timeout: 10s                         # one POST, connect to reply
//     queue_size: 1000                     # alerts waiting while it is down (oldest dropped)
//     generator_url_base: http://node-a:9464   # the daemon as the alerts' readers reach it:
//                                          # each alert's generatorURL is
//                                          # <it>/incidents?deployment=D; default:
//                                          # http://<http.listen as bound>, a wildcard
//                                          # host replaced by the host name
//   correlation: {window: 120s}            # default: each rule's own window
//   log: {level: info, format: text}       # stderr; level trace..error, format text | json
//   tailer:
//     inotify: true                        # false: poll only
//     poll_interval: 1s                    # reads of every open file without inotify
//     rescan_interval: 10s                 # glob rescans (files that appear) while polling
//     safety_rescan_interval: 60s          # with inotify (every glob directory watched): the
//                                          # rescan and re-read that catch a missed event
//     partial_line_timeout: 5s             # a line without '\n' waits this long (wall time)
//     max_line_bytes: 1048576              # longer lines are truncated and counted
//     max_files: 10000                     # files tailed at once; beyond: not opened, counted
//   limits:                                # what the daemon keeps; beyond each cap the oldest
//                                          # goes, counted in
//                                          # fingerprintd_evictions_total{what}
//     max_open_incidents: 10000            # the oldest is closed early (incident)
//     max_held_events: 100000              # events waiting for a deployment's slower sources;
//                                          # the oldest are released early (held_event)
//     max_hold: 10s                        # the longest an event waits for them
//     max_process_streams: 4096            # per source; the one silent longest is recycled
//                                          # (process_stream)
//     max_traceback_frames: 512            # middle frames dropped beyond, counted in
//     max_traceback_bytes: 524288          # lines_dropped_total{reason="traceback_truncated"}
//     traceback_timeout: 5s                # an open traceback idle this long (log time) is
//                                          # flushed, and a CRI/Docker record joined from
//                                          # partials older than it handed on (partial_record)
//     symptom_timeout: 5s                  # a symptom on a message line waits this long (log
//                                          # time) for its traceback
//   redaction:                             # secrets masked before any output (common/redact.h)
//     defaults: true                       # the built-in patterns (tokens, keys, signatures,
//                                          # passwords); false: only the ones below
//     patterns:                            # more, after them: kind [a-z0-9_]+, an RE2 whose
//       - {kind: internal_token, regex: 'itk_([A-Za-z0-9]{16,})'}   # one group is masked
//
// Every default binds to loopback. Unknown keys, a key given twice in one
// mapping, an empty label value, and two sources (or a source and http) on one
// port or one socket path are errors. Every error is one line,
// `file:line: key: reason` (key as a dotted path, e.g. `sources[0].start_at`),
// the format `config check` prints; a file's errors are all reported at once,
// one a line, in the order of their lines.
//
// Who reads what: this loader reads the sections above and, of each source,
// its `type:`. The rest of a source's section belongs to its type, whose
// schema the caller registers (config/source_types.h; the built-in file, tcp,
// unix and stdin: source/source_schemas.h), so the loader includes nothing
// of the sources or the HTTP server.
//
// Threading: values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/http_url.h"
#include "common/redact.h"
#include "fingerprintd/parse.h"
#include "fingerprintd/pipeline.h"
#include "fingerprintd/status.h"

namespace re2 {
class RE2;
}

namespace fingerprintd::config {

enum class SourceType : uint8_t { kFile = 0, kTcp, kUnix, kStdin };
std::string_view SourceTypeName(SourceType type);

enum class StartAt : uint8_t { kEnd = 0, kBeginning };

struct SourceConfig {
  SourceType type = SourceType::kFile;
  int line = 0;  // where it is in the config file, for messages
  // file
  std::vector<std::string> paths;
  std::vector<std::string> exclude;
  int64_t ignore_older_us = 0;  // 0 = open whatever its age
  parse::Envelope format = parse::Envelope::kAuto;
  StartAt start_at = StartAt::kEnd;
  std::map<std::string, std::string> labels;
  std::string deployment_from;  // RE2 with at least one capture group
  // Release the disk blocks of what was read and checkpointed, keeping each
  // file's allocated bytes under max_retained_bytes (source/release_policy.h).
  bool release_read_bytes = false;
  uint64_t max_retained_bytes = 256ull << 20;
  // tcp / unix / stdin (deployment_from and labels above apply too)
  std::string listen;             // tcp: host:port
  bool allow_remote = false;      // tcp: a non-loopback listen address needs it
  std::string path;               // unix: socket path
  uint32_t mode = 0660;           // unix: the socket file's mode
  std::string framing = "lines";  // lines | jsonl
  uint64_t max_connections = 1024;
  int64_t idle_timeout_us = 300'000'000;
  uint64_t max_line_bytes = 1 << 20;
  uint64_t max_streams = 1024;                      // per connection
  std::vector<std::string> text_fields;             // jsonl; empty = log, message
  std::map<std::string, std::string> label_fields;  // jsonl: label -> dotted field path
  std::string deployment_field = "pod";             // the label deployment_from reads
};

struct TailerConfig {
  bool inotify = true;
  int64_t poll_interval_us = 1'000'000;
  int64_t rescan_interval_us = 10'000'000;
  int64_t safety_rescan_interval_us = 60'000'000;
  int64_t partial_line_timeout_us = 5'000'000;
  uint64_t max_line_bytes = 1 << 20;
  uint64_t max_files = 10'000;
};

struct AlertmanagerConfig {
  std::string url;      // "" = no Alertmanager
  HttpClientTls tls;    // tls_config: https only (sink/http_post.h)
  HttpClientAuth auth;  // basic_auth: {username, password_file} | bearer_token_file
  std::map<std::string, std::string> labels;
  int64_t resend_interval_us = 60'000'000;
  int64_t timeout_us = 10'000'000;
  uint64_t queue_size = 1000;
  std::string generator_url_base;  // "" = from http.listen (sink/alertmanager.h)
};

// `redaction:` (common/redact.h): the built-in patterns (on unless
// `defaults: false`) followed by the config's own.
struct RedactionConfig {
  bool defaults = true;
  std::vector<RedactionPattern> patterns;
  // Every pattern in order: the defaults (when on), then the config's.
  std::vector<RedactionPattern> All() const;
};

// `limits:`; defaults are Pipeline::Options' and SourceLimits'.
struct LimitsConfig {
  uint64_t max_open_incidents = 10'000;
  uint64_t max_held_events = 100'000;
  int64_t max_hold_us = 10'000'000;
  uint64_t max_process_streams = 4096;
  uint64_t max_traceback_frames = 512;
  uint64_t max_traceback_bytes = 512 << 10;
  int64_t traceback_timeout_us = 5'000'000;
  int64_t symptom_timeout_us = 5'000'000;
};

struct DaemonConfig {
  std::string file;       // the config file, "" for the command-line form
  std::string rules_dir;  // "" = the embedded pack
  std::vector<SourceConfig> sources;
  std::string checkpoint_dir;  // "" = no checkpoints
  int64_t checkpoint_interval_us = 5'000'000;
  std::string http_listen = "127.0.0.1:9464";
  bool http_allow_remote = false;  // a non-loopback http.listen needs it
  // The file holding the bearer token of /incidents, the status page (and,
  // with http_metrics_auth, /metrics); required beside allow_remote.
  std::string http_auth_token_file;
  bool http_metrics_auth = false;
  // The incident history of /incidents and the status page (sink::IncidentStore):
  // how many closed incidents it keeps and for how long (a reload applies new ones).
  uint64_t http_history_max_closed = 500;
  int64_t http_history_max_age_us = 24LL * 3600 * 1'000'000;
  std::string incidents_path = "-";
  // An incident's lifetime (correlate::Correlator::Options): how long a
  // deployment with every source removed keeps its incidents open (gone), and
  // how long an incident stays open without a new occurrence (expired; 0 = never).
  int64_t incidents_gone_after_us = correlate::Correlator::Options().gone_after_us;
  int64_t incidents_max_age_us = correlate::Correlator::Options().max_age_us;
  AlertmanagerConfig alertmanager;
  int64_t correlation_window_us = 0;  // 0 = each rule's window
  std::string log_level = "info";
  std::string log_format = "text";
  TailerConfig tailer;
  LimitsConfig limits;
  RedactionConfig redaction;
  // `run --config FILE --label k=v...`: labels from the command line, set on
  // every source over the file's own, and again after each SIGHUP reload (a
  // sidecar's pod, namespace and node come from its args, not from the file).
  std::map<std::string, std::string> command_line_labels;
};

// The pipeline's options for `config`: correlation window and `limits:`.
Pipeline::Options PipelineOptionsFor(const DaemonConfig& config);

class SourceTypes;  // config/source_types.h: the types `sources:` may name

// Parses a config text; `file` names it in errors. Each source's section is
// read by the schema `types` holds for its `type:` (the daemon's:
// source::BuiltInSourceTypes()).
StatusOr<DaemonConfig> ParseConfig(const std::string& file, const std::string& text,
                                   const SourceTypes& types);
// Reads and parses a config file (NotFoundError when it cannot be read).
StatusOr<DaemonConfig> LoadConfigFile(const std::string& path, const SourceTypes& types);

// The command-line form: one source over `paths` (globs; "-" = stdin).
struct RunFlags {
  std::string rules_dir;
  std::vector<std::string> labels;  // "k=v"
  std::string deployment_from;
  std::string checkpoint_dir;
  std::string incidents = "-";
  std::string start_at = "end";
  std::string format = "auto";
  std::string http;             // "" = the default listen address
  std::string http_token_file;  // --http-token-file: needed for an --http beyond loopback
  std::vector<std::string> paths;
};
// Builds the one-source config; errors name the flag (`--label: ...`).
StatusOr<DaemonConfig> ConfigFromFlags(const RunFlags& flags);

// `--label k=v` values -> a map; InvalidArgumentError naming `--label` for
// anything that is not key=value with a label-shaped key and a value, or a
// key given twice. The one check of `run` and `replay` (the config file's
// `labels:` refuse the same: a bad name, an empty value).
StatusOr<std::map<std::string, std::string>> ParseLabelFlags(
    const std::vector<std::string>& labels);
// Sets `labels` on every source of `config` (over the same keys) and keeps
// them as config->command_line_labels.
void ApplyLabels(const std::map<std::string, std::string>& labels, DaemonConfig* config);

// The deployment of a tailed file, as replay names it: the `deployment`
// label; else the captures of `deployment_from` (compiled, may be null) over
// the path, joined by '/'; else `<namespace>/<pod>` for the kubelet layout
// `/var/log/pods/<ns>_<pod>_<uid>/...`; else the path itself.
// The one rule is source::DeploymentForPath (replay uses it too).
std::string DeploymentForPath(const std::map<std::string, std::string>& labels,
                              const re2::RE2* deployment_from, const std::string& path);

// A source's deployment_from, compiled with the memory bound of
// common/re2_limits.h (the config loader already rejected a pattern over it);
// null for "".
std::unique_ptr<re2::RE2> CompileDeploymentFrom(const std::string& pattern);

// "127.0.0.1:9464", "[::1]:9464", "localhost:0" -> ok; the rest: a reason.
Status CheckListenAddress(const std::string& address);
// A listener beyond loopback (0.0.0.0, a node IP, a host name) only with the
// explicit `allow_remote: true` beside it; the error says so.
Status CheckLoopbackOrAllowed(const std::string& address, bool allow_remote);

}  // namespace fingerprintd::config
