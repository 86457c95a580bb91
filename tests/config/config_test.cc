// The config contract: DESIGN.md §6 keys, loopback defaults, and one
// `file:line: key: reason` error for each way a config can be wrong.
#include "config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <re2/re2.h>

#include "sink/incident_store.h"
#include "source/source_schemas.h"
#include "testing/counting_events.h"
#include "testing/incident_builder.h"

namespace fingerprintd::config {
namespace {

// The config as the daemon reads it: with the built-in source types.
StatusOr<DaemonConfig> ParseConfig(const std::string& file, const std::string& text) {
  return config::ParseConfig(file, text, source::BuiltInSourceTypes());
}
StatusOr<DaemonConfig> LoadConfigFile(const std::string& path) {
  return config::LoadConfigFile(path, source::BuiltInSourceTypes());
}

using ::testing::HasSubstr;

constexpr const char* kDesignExample = R"(rules: /etc/fingerprintd/rules
sources:
  - type: file
    paths: ["/var/log/pods/*/vllm/*.log"]
    exclude: ["*.gz"]
    ignore_older: 24h
    format: auto
    start_at: end
    labels: {deployment: llama-70b}
    deployment_from: '/var/log/pods/[^_]+_([^_]+)-[0-9a-z]+-[0-9a-z]+_'
  - type: tcp
    listen: 127.0.0.1:5170
    framing: lines
  - type: unix
    path: /run/fingerprintd/ingest.sock
    framing: jsonl
checkpoint_dir: /var/lib/fingerprintd
http: {listen: 127.0.0.1:9464}
incidents: {path: "-"}
alertmanager: {url: http://127.0.0.1:9093}
correlation: {window: 120s}
)";

std::string ErrorOf(const std::string& text) {
  auto config = ParseConfig("f.yaml", text);
  return config.ok() ? "(ok)" : config.status().message();
}

TEST(ConfigTest, TheDesignExampleLoadsWithEveryKey) {
  auto config = ParseConfig("f.yaml", kDesignExample);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->rules_dir, "/etc/fingerprintd/rules");
  ASSERT_EQ(config->sources.size(), 3u);
  const SourceConfig& file = config->sources[0];
  EXPECT_EQ(file.type, SourceType::kFile);
  EXPECT_EQ(file.line, 3);
  EXPECT_EQ(file.paths, std::vector<std::string>{"/var/log/pods/*/vllm/*.log"});
  EXPECT_EQ(file.exclude, std::vector<std::string>{"*.gz"});
  EXPECT_EQ(file.ignore_older_us, 24LL * 3600 * 1'000'000);
  EXPECT_EQ(file.start_at, StartAt::kEnd);
  EXPECT_EQ(file.labels.at("deployment"), "llama-70b");
  EXPECT_EQ(config->sources[1].type, SourceType::kTcp);
  EXPECT_EQ(config->sources[1].listen, "127.0.0.1:5170");
  EXPECT_EQ(config->sources[2].type, SourceType::kUnix);
  EXPECT_EQ(config->sources[2].framing, "jsonl");
  EXPECT_EQ(config->checkpoint_dir, "/var/lib/fingerprintd");
  EXPECT_EQ(config->http_listen, "127.0.0.1:9464");
  EXPECT_EQ(config->incidents_path, "-");
  EXPECT_EQ(config->alertmanager.url, "http://127.0.0.1:9093");
  EXPECT_EQ(config->correlation_window_us, 120'000'000);
}

// A source type owns its section (config/source_types.h): the loader reads
// `type:` and hands the rest to the schema registered for it, so a type that
// was not registered is unknown, and a schema's own errors name the file,
// line and key like the loader's.
TEST(ConfigTest, EachSourceTypeReadsItsOwnSectionAndOnlyRegisteredTypesAreKnown) {
  SourceTypes only_file;
  only_file.Add("file", SourceType::kFile, &source::ReadFileSourceSection);
  auto tcp = config::ParseConfig("f.yaml", "sources:\n  - {type: tcp}\n", only_file);
  ASSERT_FALSE(tcp.ok());
  EXPECT_EQ(tcp.status().message(), "f.yaml:2: sources[0].type: expected file, got 'tcp'");

  SourceTypes with_probe = only_file;
  with_probe.Add("probe", SourceType::kStdin, [](SourceSection& section, SourceConfig* out) {
    section.Keys({"type", "every"});
    uint64_t every = 10;
    section.AtLeast("every", 5, 60, &every);
    out->framing = "probe-" + std::to_string(every);
  });
  auto probe = config::ParseConfig(
      "f.yaml", "sources:\n  - {type: file, paths: [x]}\n  - {type: probe, every: 30}\n",
      with_probe);
  ASSERT_TRUE(probe.ok()) << probe.status().message();
  EXPECT_EQ(probe->sources[1].type, SourceType::kStdin);
  EXPECT_EQ(probe->sources[1].framing, "probe-30");
  EXPECT_EQ(probe->sources[1].line, 3);
  auto wrong = config::ParseConfig(
      "f.yaml", "sources:\n  - type: probe\n    every: 2\n    paths: [x]\n", with_probe);
  ASSERT_FALSE(wrong.ok());
  EXPECT_THAT(wrong.status().message(),
              HasSubstr("f.yaml:3: sources[0].every: must be at least 5"));
  EXPECT_THAT(wrong.status().message(), HasSubstr("f.yaml:4: sources[0].paths: unknown key"));
}

TEST(ConfigTest, EveryDefaultBindsToLoopback) {
  auto config = ParseConfig("f.yaml", "sources:\n  - type: tcp\n  - type: file\n    paths: [x]\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->http_listen, "127.0.0.1:9464");
  EXPECT_EQ(config->sources[0].listen, "127.0.0.1:5170");
  EXPECT_EQ(config->sources[1].start_at, StartAt::kEnd);
  EXPECT_EQ(config->incidents_path, "-");
  EXPECT_TRUE(config->alertmanager.url.empty());
}

TEST(ConfigTest, AnUnknownKeyIsAnErrorNamingItsLineAndPath) {
  EXPECT_EQ(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    start_from: end\n"),
            "f.yaml:4: sources[0].start_from: unknown key");
  EXPECT_EQ(ErrorOf("sources:\n  - type: file\n    paths: [x]\nhttp:\n  lisen: 1.2.3.4:1\n"),
            "f.yaml:5: http.lisen: unknown key");
  EXPECT_EQ(ErrorOf("colour: blue\nsources:\n  - {type: file, paths: [x]}\n"),
            "f.yaml:1: colour: unknown key");
}

TEST(ConfigTest, BadValuesAreErrorsNamingTheKey) {
  EXPECT_EQ(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    start_at: middle\n"),
            "f.yaml:4: sources[0].start_at: expected end or beginning, got 'middle'");
  EXPECT_THAT(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    format: xml\n"),
              HasSubstr("f.yaml:4: sources[0].format: expected auto, plain"));
  EXPECT_THAT(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    ignore_older: soon\n"),
              HasSubstr("f.yaml:4: sources[0].ignore_older: expected a positive duration"));
  EXPECT_THAT(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    deployment_from: '('\n"),
              HasSubstr("f.yaml:4: sources[0].deployment_from: invalid RE2 pattern"));
  EXPECT_THAT(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    deployment_from: 'pods'\n"),
              HasSubstr("sources[0].deployment_from: needs a capture group"));
  EXPECT_THAT(ErrorOf("sources:\n  - type: tcp\n    listen: everywhere\n"),
              HasSubstr("f.yaml:3: sources[0].listen: expected host:port"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: file, paths: [x]}\nhttp: {listen: ':99999'}\n"),
              HasSubstr("f.yaml:3: http.listen: expected host:port"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: pipe}\n"),
              HasSubstr("f.yaml:2: sources[0].type: expected file, tcp, unix or stdin"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: file, paths: [x]}\nalertmanager: {url: am:9093}\n"),
              HasSubstr("f.yaml:3: alertmanager.url: expected http(s)://"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: file, paths: [x]}\ntailer: {max_line_bytes: 12}\n"),
              HasSubstr("f.yaml:3: tailer.max_line_bytes: must be at least 1024"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: file, paths: [x], labels: {'a-b': c}}\n"),
              HasSubstr("sources[0].labels: label name 'a-b'"));
}

TEST(ConfigTest, AListenerBeyondLoopbackNeedsABearerTokenFile) {
  EXPECT_EQ(ErrorOf("sources:\n  - {type: file, paths: [x]}\n"
                    "http: {listen: 0.0.0.0:9464, allow_remote: true}\n"),
            "f.yaml:3: http.auth_token_file: required with allow_remote: true: a file holding the "
            "bearer token clients must present for /incidents and the status page (a Kubernetes "
            "Secret)");
  auto remote = ParseConfig("f.yaml",
                            "sources:\n  - {type: file, paths: [x]}\n"
                            "http: {listen: 0.0.0.0:9464, allow_remote: true, auth_token_file: "
                            "/run/secrets/token, metrics_auth: true}\n");
  ASSERT_TRUE(remote.ok()) << remote.status().message();
  EXPECT_EQ(remote->http_auth_token_file, "/run/secrets/token");
  EXPECT_TRUE(remote->http_metrics_auth);
  RunFlags flags;
  flags.paths = {"x"};
  flags.http = "0.0.0.0:9464";
  auto command_line = ConfigFromFlags(flags);
  ASSERT_FALSE(command_line.ok());
  EXPECT_THAT(command_line.status().message(), HasSubstr("--http-token-file"));
  flags.http_token_file = "/run/secrets/token";
  ASSERT_TRUE(ConfigFromFlags(flags).ok());
  flags.http = "127.0.0.1:0";
  flags.http_token_file.clear();
  EXPECT_TRUE(ConfigFromFlags(flags).ok()) << "loopback needs no token";
}

// Issue 45: `config check /nonexistent.yaml` printed "cannot read" without why.
TEST(ConfigTest, AFileThatCannotBeReadIsAnErrorSayingWhy) {
  EXPECT_EQ(LoadConfigFile("/nonexistent/fingerprintd.yaml").status().message(),
            "/nonexistent/fingerprintd.yaml: cannot read: No such file or directory");
}

// 999999999d overflowed 64-bit microseconds into a negative duration.
TEST(ConfigTest, ADurationTooLongForMicrosecondsIsAnErrorNotAnOverflow) {
  EXPECT_EQ(
      ErrorOf(
          "sources:\n  - {type: file, paths: [x]}\nincidents: {path: x, gone_after: 999999999d}\n"),
      "f.yaml:3: incidents.gone_after: '999999999d' is longer than the maximum of 3650d");
  auto longest = ParseConfig(
      "f.yaml", "sources:\n  - {type: file, paths: [x]}\nincidents: {path: x, max_age: 3650d}\n");
  ASSERT_TRUE(longest.ok()) << longest.status().message();
  EXPECT_EQ(longest->incidents_max_age_us, 3650LL * 86'400'000'000LL);
}

TEST(ConfigTest, RedactionIsOnByDefaultAndTheConfigAddsItsOwnPatterns) {
  auto defaults = ParseConfig("f.yaml", "sources:\n  - {type: file, paths: [x]}\n");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->redaction.All().size(), Redactor::Defaults().size());
  auto extended = ParseConfig("f.yaml",
                              "sources:\n  - {type: file, paths: [x]}\n"
                              "redaction:\n  patterns:\n"
                              "    - {kind: internal_token, regex: 'itk_([A-Za-z0-9]{16,})'}\n");
  ASSERT_TRUE(extended.ok()) << extended.status().message();
  ASSERT_EQ(extended->redaction.All().size(), Redactor::Defaults().size() + 1);
  EXPECT_EQ(extended->redaction.All().back().kind, "internal_token");
  auto only = ParseConfig("f.yaml",
                          "sources:\n  - {type: file, paths: [x]}\n"
                          "redaction: {defaults: false, patterns: [{kind: k, regex: 'x(y)'}]}\n");
  ASSERT_TRUE(only.ok()) << only.status().message();
  EXPECT_EQ(only->redaction.All().size(), 1u);
  EXPECT_EQ(ErrorOf("sources:\n  - {type: file, paths: [x]}\nredaction:\n  patterns:\n"
                    "    - {kind: Bad Kind, regex: 'x'}\n"),
            "f.yaml:5: redaction.patterns[0].kind: only a-z, 0-9 and _, got 'Bad Kind'");
  EXPECT_EQ(ErrorOf("sources:\n  - {type: file, paths: [x]}\nredaction:\n  patterns:\n"
                    "    - {kind: k, regex: '(a)(b)'}\n"),
            "f.yaml:5: redaction.patterns[0].regex: at most one capture group (the secret), got 2");
  EXPECT_THAT(
      ErrorOf("sources:\n  - {type: file, paths: [x]}\nredaction: {patterns: [{kind: k}]}\n"),
      HasSubstr("redaction.patterns[0].regex: missing required key"));
}

TEST(ConfigTest, ADeploymentFromPatternTooLargeForRe2sBudgetIsRejectedNamingTheKey) {
  EXPECT_THAT(
      ErrorOf(
          "sources:\n  - type: file\n    paths: [x]\n    deployment_from: '((?:\\pL{100}){10})'\n"),
      HasSubstr("f.yaml:4: sources[0].deployment_from: pattern too large ("));
  EXPECT_THAT(ErrorOf("sources:\n  - type: tcp\n    deployment_from: '(\\w+\\s*){1000}'\n"),
              HasSubstr("f.yaml:3: sources[0].deployment_from: pattern too large (its RE2 "
                        "program has 10004 instructions"));
  EXPECT_THAT(
      ConfigFromFlags({.deployment_from = "(.{1000})", .paths = {"x.log"}}).status().message(),
      HasSubstr("--deployment-from: pattern too large"));
  auto compiled = CompileDeploymentFrom("/pods/([^/]+)/");
  ASSERT_NE(compiled, nullptr);
  EXPECT_EQ(compiled->options().max_mem(), 1 << 20);
}

TEST(ConfigTest, AlertmanagerTakesLabelsResendTimeoutAndQueueSize) {
  auto config = ParseConfig("f.yaml", R"(sources:
  - {type: file, paths: [x]}
alertmanager:
  url: http://am.monitoring:9093/am/
  labels: {cluster: prod, team: ml}
  resend_interval: 30s
  timeout: 2s
  queue_size: 50
)");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->alertmanager.url, "http://am.monitoring:9093/am/");
  EXPECT_EQ(config->alertmanager.labels.at("cluster"), "prod");
  EXPECT_EQ(config->alertmanager.resend_interval_us, 30'000'000);
  EXPECT_EQ(config->alertmanager.timeout_us, 2'000'000);
  EXPECT_EQ(config->alertmanager.queue_size, 50u);
}

TEST(ConfigTest, AlertmanagerDefaultsResendEveryMinuteWithATenSecondTimeout) {
  auto config = ParseConfig(
      "f.yaml", "sources:\n  - {type: file, paths: [x]}\nalertmanager: {url: http://am:9093}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->alertmanager.resend_interval_us, 60'000'000);
  EXPECT_EQ(config->alertmanager.timeout_us, 10'000'000);
  EXPECT_EQ(config->alertmanager.queue_size, 1000u);
  EXPECT_TRUE(config->alertmanager.labels.empty());
}

TEST(ConfigTest, AlertmanagerBadSchemeABuiltInLabelOrAZeroQueueAreErrors) {
  const std::string head = "sources:\n  - {type: file, paths: [x]}\n";
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'ftp://am:9093'}\n"),
              HasSubstr("f.yaml:3: alertmanager.url: expected http(s)://host[:port][/path]"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'http://am:99999'}\n"),
              HasSubstr("f.yaml:3: alertmanager.url: port out of range"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'http://am', labels: {severity: low}}\n"),
              HasSubstr("alertmanager.labels: label 'severity' is set by fingerprintd"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'http://am', labels: {'a.b': c}}\n"),
              HasSubstr("alertmanager.labels: label name 'a.b'"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'http://am', queue_size: 0}\n"),
              HasSubstr("alertmanager.queue_size: must be > 0"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'http://am', resend: 1s}\n"),
              HasSubstr("alertmanager.resend: unknown key"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {labels: {a: b}}\n"),
              HasSubstr("alertmanager.url: missing required key"));
}

// Issue 45: the reference shows `path: "-"` as the default, so a config
// that sets only when incidents close takes it (it used to be "missing
// required key").
TEST(ConfigTest, IncidentsWithoutAPathWriteToStdoutAsTheReferenceSays) {
  auto config = ParseConfig("f.yaml",
                            "sources:\n  - {type: file, paths: [x]}\n"
                            "incidents: {gone_after: 5m}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->incidents_path, "-");
  EXPECT_EQ(config->incidents_gone_after_us, 300'000'000);
  EXPECT_THAT(ErrorOf("sources:\n  - {type: file, paths: [x]}\nincidents: {path: ''}\n"),
              HasSubstr("f.yaml:3: incidents.path: must not be empty"));
}

// Issue 42: one strict YAML module for the config and the rules
// (common/yaml_strict.h). A quote left open swallows the keys after it in
// yaml-cpp; the rule loader said so, the config read on: now both say so.
TEST(ConfigTest, AnUnterminatedQuoteIsAnErrorAtItsLineNotSwallowedKeys) {
  const std::string head = "sources:\n  - {type: file, paths: [x]}\n";
  EXPECT_THAT(ErrorOf(head + "incidents:\n  path: \"/var/log/inc.jsonl\n  max_age: 24h\n"),
              HasSubstr("f.yaml:4: incidents.path: unterminated quote: the string runs on into "
                        "line 5"));
  EXPECT_THAT(ErrorOf(head + "incidents:\n  path: \"/var/log/inc.jsonl\n"
                             "http:\n  listen: \"127.0.0.1:9464\"\n"),
              HasSubstr("f.yaml:4: yaml: unterminated quote (then at line"));
}

// Issue 42: a managed Alertmanager wants TLS and a login. The files are not
// read by `config check` (the Secrets may not be mounted where it runs).
TEST(ConfigTest, AlertmanagerOverHttpsTakesACaAClientCertificateAndBasicAuthOrABearerToken) {
  const std::string head = "sources:\n  - {type: file, paths: [x]}\n";
  auto config = ParseConfig("f.yaml", head + R"(alertmanager:
  url: https://am.monitoring:9093/am
  tls_config: {ca_file: /s/ca.crt, cert_file: /s/tls.crt, key_file: /s/tls.key, server_name: am}
  basic_auth: {username: fp, password_file: /s/password}
)");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->alertmanager.tls.ca_file, "/s/ca.crt");
  EXPECT_EQ(config->alertmanager.tls.cert_file, "/s/tls.crt");
  EXPECT_EQ(config->alertmanager.tls.key_file, "/s/tls.key");
  EXPECT_EQ(config->alertmanager.tls.server_name, "am");
  EXPECT_EQ(config->alertmanager.auth.username, "fp");
  EXPECT_EQ(config->alertmanager.auth.password_file, "/s/password");
  config =
      ParseConfig("f.yaml", head + "alertmanager: {url: 'https://am', bearer_token_file: /t}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->alertmanager.auth.bearer_token_file, "/t");
}

TEST(ConfigTest, AlertmanagerTlsWithoutHttpsOrTwoLoginsAreErrorsNamingTheKey) {
  const std::string head = "sources:\n  - {type: file, paths: [x]}\n";
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'http://am', tls_config: {ca_file: /c}}\n"),
              HasSubstr("f.yaml:3: alertmanager.tls_config: needs an https:// url"));
  EXPECT_THAT(ErrorOf(head + "alertmanager:\n  url: https://am\n  bearer_token_file: /t\n"
                             "  basic_auth: {username: u, password_file: /p}\n"),
              HasSubstr("alertmanager: basic_auth and bearer_token_file are two ways to log in"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'https://am', basic_auth: {username: u}}\n"),
              HasSubstr("alertmanager.basic_auth.password_file: missing required key"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'https://am', tls_config: {ca: /c}}\n"),
              HasSubstr("alertmanager.tls_config.ca: unknown key"));
}

// The base of each pushed alert's generatorURL: how the alerts' readers reach
// the daemon (a Service, an ingress); default: http.listen as bound.
TEST(ConfigTest, AlertmanagerGeneratorUrlBaseIsAnHttpUrlKeptWithoutItsTrailingSlash) {
  const std::string head = "sources:\n  - {type: file, paths: [x]}\n";
  auto config = ParseConfig("f.yaml", head +
                                          "alertmanager: {url: 'http://am', generator_url_base: "
                                          "'https://fingerprintd.example.org/node-a/'}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->alertmanager.generator_url_base, "https://fingerprintd.example.org/node-a");
  auto by_default = ParseConfig("f.yaml", head + "alertmanager: {url: 'http://am'}\n");
  ASSERT_TRUE(by_default.ok()) << by_default.status().message();
  EXPECT_EQ(by_default->alertmanager.generator_url_base, "");
  EXPECT_THAT(
      ErrorOf(head + "alertmanager: {url: 'http://am', generator_url_base: 'node-a:9464'}\n"),
      HasSubstr("f.yaml:3: alertmanager.generator_url_base: expected "
                "http(s)://host[:port][/path] with no query or fragment, got 'node-a:9464'"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'http://am', generator_url_base: "
                             "'http://node-a:9464/?x=1'}\n"),
              HasSubstr("alertmanager.generator_url_base: expected http(s)://host"));
  EXPECT_THAT(ErrorOf(head + "alertmanager: {url: 'http://am', generator_url_base: ''}\n"),
              HasSubstr("alertmanager.generator_url_base: expected http(s)://host"));
}

TEST(ConfigTest, MissingSourcesOrPathsAreErrors) {
  EXPECT_THAT(ErrorOf(""), HasSubstr("f.yaml:1: sources: empty config"));
  EXPECT_THAT(ErrorOf("rules: /x\n"), HasSubstr("f.yaml:1: sources: missing required key"));
  EXPECT_THAT(ErrorOf("sources: []\n"), HasSubstr("sources: expected a non-empty list"));
  EXPECT_THAT(ErrorOf("sources:\n  - type: file\n"),
              HasSubstr("f.yaml:2: sources[0].paths: missing required key"));
  EXPECT_THAT(ErrorOf("sources:\n  - paths: [x]\n"),
              HasSubstr("f.yaml:2: sources[0].type: missing required key"));
}

TEST(ConfigTest, AYamlSyntaxErrorNamesItsLine) {
  EXPECT_THAT(ErrorOf("sources:\n  - type: file\n    paths: [x\n"), HasSubstr("f.yaml:"));
  EXPECT_THAT(ErrorOf("sources:\n  - type: file\n    paths: [x\n"), HasSubstr(": yaml: "));
}

TEST(ConfigTest, LimitsTakeEveryCapAndGoIntoThePipelineOptions) {
  auto config = ParseConfig("f.yaml",
                            "sources: [{type: file, paths: [x]}]\n"
                            "correlation: {window: 90s}\n"
                            "limits:\n"
                            "  max_open_incidents: 50\n"
                            "  max_held_events: 2000\n"
                            "  max_hold: 3s\n"
                            "  max_process_streams: 64\n"
                            "  max_traceback_frames: 128\n"
                            "  max_traceback_bytes: 65536\n"
                            "  traceback_timeout: 2s\n"
                            "  symptom_timeout: 7s\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const Pipeline::Options options = PipelineOptionsFor(*config);
  EXPECT_EQ(options.correlator.window_us, 90'000'000);
  EXPECT_EQ(options.correlator.max_open_incidents, 50u);
  EXPECT_EQ(options.max_held_events, 2000u);
  EXPECT_EQ(options.max_hold_us, 3'000'000);
  EXPECT_EQ(options.engine.pending_timeout_us, 7'000'000);
  ASSERT_TRUE(options.source_limits.has_value());
  EXPECT_EQ(options.source_limits->max_process_streams, 64u);
  EXPECT_EQ(options.source_limits->max_traceback_frames, 128u);
  EXPECT_EQ(options.source_limits->max_traceback_bytes, 65536u);
  EXPECT_EQ(options.source_limits->traceback_timeout_us, 2'000'000);
}

TEST(ConfigTest, WithoutLimitsThePipelineKeepsItsDefaults) {
  auto config = ParseConfig("f.yaml", "sources: [{type: file, paths: [x]}]\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const Pipeline::Options options = PipelineOptionsFor(*config);
  const Pipeline::Options defaults;
  const parse::ParserOptions parser;
  EXPECT_EQ(options.correlator.max_open_incidents, defaults.correlator.max_open_incidents);
  EXPECT_EQ(options.max_held_events, defaults.max_held_events);
  EXPECT_EQ(options.max_hold_us, defaults.max_hold_us);
  EXPECT_EQ(options.engine.pending_timeout_us, defaults.engine.pending_timeout_us);
  EXPECT_EQ(options.source_limits->max_process_streams, parser.max_workers);
  EXPECT_EQ(options.source_limits->max_traceback_frames, parser.max_traceback_frames);
  EXPECT_EQ(options.source_limits->max_traceback_bytes, parser.max_traceback_bytes);
  EXPECT_EQ(options.source_limits->traceback_timeout_us, parser.traceback_timeout_us);
}

TEST(ConfigTest, BadLimitsAreErrorsNamingTheKey) {
  const std::string head = "sources: [{type: file, paths: [x]}]\nlimits:\n";
  EXPECT_EQ(ErrorOf(head + "  max_open_incidents: 0\n"),
            "f.yaml:3: limits.max_open_incidents: must be at least 1");
  EXPECT_EQ(ErrorOf(head + "  max_held_events: lots\n"),
            "f.yaml:3: limits.max_held_events: expected an integer from 0 to 10000000");
  EXPECT_EQ(ErrorOf(head + "  max_traceback_frames: 2\n"),
            "f.yaml:3: limits.max_traceback_frames: must be at least 4");
  EXPECT_EQ(ErrorOf(head + "  max_traceback_bytes: 100\n"),
            "f.yaml:3: limits.max_traceback_bytes: must be at least 1024");
  EXPECT_THAT(ErrorOf(head + "  symptom_timeout: never\n"),
              HasSubstr("f.yaml:3: limits.symptom_timeout: expected a positive duration"));
  EXPECT_EQ(ErrorOf(head + "  max_open: 5\n"), "f.yaml:3: limits.max_open: unknown key");
}

// ---- http: the incident history of /incidents and the status page ----------

// The store as the daemon builds it from the config (daemon/run.cc).
sink::IncidentStore StoreFor(const DaemonConfig& config, PipelineEvents& events) {
  return sink::IncidentStore(events, config.http_history_max_closed,
                             config.http_history_max_age_us);
}

TEST(ConfigTest, TheIncidentHistoryKeepsAsManyClosedIncidentsForAsLongAsTheHttpKeysSay) {
  auto config = ParseConfig("f.yaml",
                            "sources: [{type: file, paths: [x]}]\n"
                            "http:\n"
                            "  listen: 127.0.0.1:9464\n"
                            "  history_max_closed: 3\n"
                            "  history_max_age: 1h\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->http_history_max_closed, 3u);
  EXPECT_EQ(config->http_history_max_age_us, 3'600'000'000);

  testing::CountingEvents events;
  sink::IncidentStore store = StoreFor(*config, events);
  constexpr int64_t kT0 = 1'770'000'000'000'000;
  for (int i = 0; i < 30; ++i) {
    correlate::Incident incident =
        testing::IncidentOfRule("cuda-out-of-memory", "inc-" + std::to_string(i), "d");
    incident.last_seen_us = kT0 + i * 1'000'000;
    store.OnIncident(correlate::IncidentChange::kOpened, incident);
    incident.closed = correlate::CloseReason::kRecovered;
    store.OnIncident(correlate::IncidentChange::kClosed, incident);
  }
  EXPECT_EQ(store.size(), 3u);
  EXPECT_EQ(events.Evictions(Evicted::kIncidentHistory), 27u);
  store.Prune(kT0 + 29 * 1'000'000 + 3'600'000'000);  // the newest is exactly an hour old
  EXPECT_EQ(store.size(), 1u);
  store.Prune(kT0 + 29 * 1'000'000 + 3'600'000'001);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(events.Evictions(Evicted::kIncidentHistory), 30u);
}

TEST(ConfigTest, WithoutHistoryKeysTheIncidentStoreKeepsItsDefaults) {
  auto config = ParseConfig("f.yaml", "sources: [{type: file, paths: [x]}]\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->http_history_max_closed, 500u);
  EXPECT_EQ(config->http_history_max_age_us, 24LL * 3600 * 1'000'000);
}

TEST(ConfigTest, BadHistoryKeysAreErrorsNamingTheKey) {
  const std::string head = "sources: [{type: file, paths: [x]}]\nhttp:\n";
  EXPECT_EQ(ErrorOf(head + "  history_max_closed: 2000000\n"),
            "f.yaml:3: http.history_max_closed: expected an integer from 0 to 1000000");
  EXPECT_EQ(ErrorOf(head + "  history_max_closed: -1\n"),
            "f.yaml:3: http.history_max_closed: expected an integer from 0 to 1000000");
  EXPECT_THAT(ErrorOf(head + "  history_max_age: forever\n"),
              HasSubstr("f.yaml:3: http.history_max_age: expected a positive duration"));
  EXPECT_THAT(ErrorOf(head + "  history_max_age: 0s\n"),
              HasSubstr("f.yaml:3: http.history_max_age: expected a positive duration"));
  EXPECT_EQ(ErrorOf(head + "  history: 5\n"), "f.yaml:3: http.history: unknown key");
}

TEST(ConfigTest, OurOwnKeysHaveDefaultsAndBounds) {
  auto config = ParseConfig("f.yaml",
                            "sources: [{type: file, paths: [x]}]\n"
                            "log: {level: debug, format: json}\n"
                            "tailer: {inotify: false, poll_interval: 250ms, max_files: 5}\n"
                            "checkpoint_interval: 2s\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->log_level, "debug");
  EXPECT_EQ(config->log_format, "json");
  EXPECT_FALSE(config->tailer.inotify);
  EXPECT_EQ(config->tailer.poll_interval_us, 250'000);
  EXPECT_EQ(config->tailer.max_files, 5u);
  EXPECT_EQ(config->tailer.rescan_interval_us, 10'000'000);
  EXPECT_EQ(config->tailer.safety_rescan_interval_us, 60'000'000);
  EXPECT_EQ(config->checkpoint_interval_us, 2'000'000);
}

TEST(ConfigTest, TheCommandLineFormIsAOneSourceConfig) {
  RunFlags flags;
  flags.labels = {"deployment=llama", "cluster=prod"};
  flags.paths = {"/var/log/a.log", "/var/log/pods/**/*.log"};
  flags.start_at = "beginning";
  flags.checkpoint_dir = "/tmp/ck";
  auto config = ConfigFromFlags(flags);
  ASSERT_TRUE(config.ok()) << config.status().message();
  ASSERT_EQ(config->sources.size(), 1u);
  EXPECT_EQ(config->sources[0].type, SourceType::kFile);
  EXPECT_EQ(config->sources[0].paths, flags.paths);
  EXPECT_EQ(config->sources[0].labels.at("deployment"), "llama");
  EXPECT_EQ(config->sources[0].labels.at("cluster"), "prod");
  EXPECT_EQ(config->sources[0].start_at, StartAt::kBeginning);
  EXPECT_EQ(config->checkpoint_dir, "/tmp/ck");
  EXPECT_EQ(config->http_listen, "127.0.0.1:9464");
}

TEST(ConfigTest, TheCommandLineFormRejectsBadFlagsNamingThem) {
  RunFlags flags;
  flags.paths = {"x.log"};
  flags.labels = {"novalue"};
  EXPECT_THAT(ConfigFromFlags(flags).status().message(), HasSubstr("--label: expected key=value"));
  flags.labels.clear();
  flags.start_at = "now";
  EXPECT_THAT(ConfigFromFlags(flags).status().message(), HasSubstr("--start-at"));
  flags.start_at = "end";
  flags.deployment_from = "(";
  EXPECT_THAT(ConfigFromFlags(flags).status().message(), HasSubstr("--deployment-from: invalid"));
  flags.deployment_from.clear();
  flags.paths = {"-", "x.log"};
  EXPECT_THAT(ConfigFromFlags(flags).status().message(), HasSubstr("cannot be mixed"));
  flags.paths = {"-"};
  auto stdin_config = ConfigFromFlags(flags);
  ASSERT_TRUE(stdin_config.ok());
  EXPECT_EQ(stdin_config->sources[0].type, SourceType::kStdin);
}

TEST(ConfigTest, DeploymentsAreNamedAsReplayNamesThem) {
  RE2 from("/logs/([^/]+)/");
  EXPECT_EQ(DeploymentForPath({{"deployment", "x"}}, &from, "/logs/a/0.log"), "x");
  EXPECT_EQ(DeploymentForPath({}, &from, "/logs/a/0.log"), "a");
  EXPECT_EQ(DeploymentForPath({}, nullptr, "/var/log/pods/ns_pod-1_uid/vllm/0.log"), "ns/pod-1");
  EXPECT_EQ(DeploymentForPath({}, &from, "/other/0.log"), "/other/0.log");
}

TEST(ConfigTest, ListenAddressesAcceptHostPortForms) {
  EXPECT_TRUE(CheckListenAddress("127.0.0.1:9464").ok());
  EXPECT_TRUE(CheckListenAddress("[::1]:0").ok());
  EXPECT_TRUE(CheckListenAddress("localhost:80").ok());
  EXPECT_FALSE(CheckListenAddress("9464").ok());
  EXPECT_FALSE(CheckListenAddress("127.0.0.1:70000").ok());
}

TEST(ConfigTest, SocketSourcesTakeLimitsAndJsonFields) {
  auto config = ParseConfig("f.yaml", R"(sources:
  - type: tcp
    listen: 0.0.0.0:5170
    allow_remote: true
    framing: jsonl
    labels: {cluster: prod}
    max_connections: 64
    idle_timeout: 30s
    max_line_bytes: 65536
    max_streams: 16
    text_fields: [msg, log]
    label_fields: {deployment: kubernetes.labels.app, pod: k8s.pod}
    deployment_from: '^(.+)-[0-9a-f]+-[0-9a-z]{5}$'
    deployment_field: pod
  - {type: unix, path: /run/x.sock, mode: "0600"}
  - {type: stdin, framing: jsonl}
)");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const SourceConfig& tcp = config->sources[0];
  EXPECT_TRUE(tcp.allow_remote);
  EXPECT_EQ(tcp.max_connections, 64u);
  EXPECT_EQ(tcp.idle_timeout_us, 30'000'000);
  EXPECT_EQ(tcp.max_line_bytes, 65536u);
  EXPECT_EQ(tcp.max_streams, 16u);
  EXPECT_EQ(tcp.text_fields, (std::vector<std::string>{"msg", "log"}));
  EXPECT_EQ(tcp.label_fields.at("deployment"), "kubernetes.labels.app");
  EXPECT_EQ(tcp.labels.at("cluster"), "prod");
  EXPECT_EQ(config->sources[1].mode, 0600u);
  EXPECT_EQ(config->sources[1].max_connections, 1024u);  // the defaults
  EXPECT_EQ(config->sources[2].framing, "jsonl");
}

TEST(ConfigTest, SocketSourcesDefaultToLoopbackAndMode0660) {
  auto config = ParseConfig("f.yaml", "sources: [{type: tcp}, {type: unix, path: /run/x.sock}]\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->sources[0].listen, "127.0.0.1:5170");
  EXPECT_FALSE(config->sources[0].allow_remote);
  EXPECT_EQ(config->sources[1].mode, 0660u);
  EXPECT_EQ(config->sources[1].framing, "lines");
}

TEST(ConfigTest, BadSocketSourceValuesAreErrorsNamingTheKey) {
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp, listen: '0.0.0.0:5170'}\n"),
              HasSubstr("f.yaml:2: sources[0].listen: '0.0.0.0:5170' listens beyond loopback"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp, max_connections: 0}\n"),
              HasSubstr("f.yaml:2: sources[0].max_connections: must be > 0"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp, max_line_bytes: 10}\n"),
              HasSubstr("f.yaml:2: sources[0].max_line_bytes: must be at least 1024"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp, idle_timeout: soon}\n"),
              HasSubstr("f.yaml:2: sources[0].idle_timeout:"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp, label_fields: {node: host}}\n"),
              HasSubstr("f.yaml:2: sources[0].label_fields: unknown label 'node'"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp, deployment_field: deployment}\n"),
              HasSubstr("f.yaml:2: sources[0].deployment_field: expected namespace, pod"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp, deployment_from: 'no-group'}\n"),
              HasSubstr("f.yaml:2: sources[0].deployment_from: needs a capture group"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: unix, path: /x.sock, mode: rw}\n"),
              HasSubstr("f.yaml:2: sources[0].mode: expected an octal file mode"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: unix, path: /x.sock, listen: '127.0.0.1:1'}\n"),
              HasSubstr("f.yaml:2: sources[0].listen"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: stdin, max_connections: 2}\n"),
              HasSubstr("f.yaml:2: sources[0].max_connections"));
}

TEST(ConfigTest, CommandLineLabelsGoOnEverySourceOverTheFilesOwn) {
  auto config = ParseConfig("f.yaml",
                            "sources:\n"
                            "  - {type: file, paths: [a.log], labels: {pod: from-file, team: x}}\n"
                            "  - {type: tcp, listen: 127.0.0.1:0}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  auto labels = ParseLabelFlags({"pod=vllm-0", "node=gpu-7"});
  ASSERT_TRUE(labels.ok());
  ApplyLabels(*labels, &*config);
  EXPECT_EQ(config->sources[0].labels, (std::map<std::string, std::string>{
                                           {"node", "gpu-7"}, {"pod", "vllm-0"}, {"team", "x"}}));
  EXPECT_EQ(config->sources[1].labels.at("pod"), "vllm-0");
  EXPECT_EQ(config->command_line_labels.size(), 2u);
  auto bad = ParseLabelFlags({"no-equals-sign"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--label: expected key=value"));
}

TEST(ConfigTest, AFileSourceReleasesReadBytesUnderItsBoundOnlyWithACheckpointDir) {
  auto config =
      ParseConfig("f.yaml",
                  "sources:\n  - type: file\n    paths: [x]\n    release_read_bytes: true\n"
                  "    max_retained_bytes: 1Gi\ncheckpoint_dir: /tmp/cp\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_TRUE(config->sources[0].release_read_bytes);
  EXPECT_EQ(config->sources[0].max_retained_bytes, 1ull << 30);
  config = ParseConfig("f.yaml",
                       "sources:\n  - {type: file, paths: [x], release_read_bytes: true, "
                       "max_retained_bytes: 33554432}\ncheckpoint_dir: /tmp/cp\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->sources[0].max_retained_bytes, 32u << 20);
  config = ParseConfig("f.yaml", "sources:\n  - {type: file, paths: [x]}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->sources[0].release_read_bytes);
  EXPECT_EQ(config->sources[0].max_retained_bytes, 256u << 20);

  EXPECT_EQ(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    release_read_bytes: true\n"),
            "f.yaml:4: sources[0].release_read_bytes: needs a checkpoint_dir: bytes are released "
            "once a checkpoint has committed them");
  EXPECT_EQ(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    max_retained_bytes: 1Gi\n"),
            "f.yaml:4: sources[0].max_retained_bytes: only with release_read_bytes: true");
  EXPECT_EQ(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    release_read_bytes: true\n"
                    "    max_retained_bytes: 1GB\ncheckpoint_dir: /tmp/cp\n"),
            "f.yaml:5: sources[0].max_retained_bytes: expected a size in bytes (e.g. 268435456, "
            "256Mi, 1Gi), got '1GB'");
  EXPECT_EQ(ErrorOf("sources:\n  - type: file\n    paths: [x]\n    release_read_bytes: true\n"
                    "    max_retained_bytes: 8Mi\ncheckpoint_dir: /tmp/cp\n"),
            "f.yaml:5: sources[0].max_retained_bytes: must be at least 16Mi (a read of 8 MiB and "
            "room for the writer)");
}

TEST(ConfigTest, EveryErrorOfAFileIsReportedAtOnceInLineOrderNotOnlyTheFirst) {
  EXPECT_EQ(ErrorOf("colour: blue\n"
                    "sources:\n"
                    "  - type: file\n"
                    "    paths: [x]\n"
                    "    start_at: middle\n"
                    "    format: xml\n"
                    "  - {type: tcp, listen: nowhere, max_connections: 0}\n"
                    "log: {level: loud}\n"
                    "limits: {max_hold: forever}\n"),
            "f.yaml:1: colour: unknown key\n"
            "f.yaml:5: sources[0].start_at: expected end or beginning, got 'middle'\n"
            "f.yaml:6: sources[0].format: expected auto, plain, cri, docker, journald or compose, "
            "got 'xml'\n"
            "f.yaml:7: sources[1].listen: expected host:port (e.g. 127.0.0.1:9464), got 'nowhere'\n"
            "f.yaml:7: sources[1].max_connections: must be > 0\n"
            "f.yaml:8: log.level: expected trace, debug, info, warn, error, critical or off\n"
            "f.yaml:9: limits.max_hold: expected a positive duration such as 500ms, 30s, 10m, 2h "
            "or 1d");
}

TEST(ConfigTest, ADuplicateKeyIsAnErrorNotASilentlyDroppedGlob) {
  // yaml-cpp keeps both and answers with the first: the second glob was never tailed.
  EXPECT_EQ(ErrorOf("sources:\n"
                    "  - type: file\n"
                    "    paths: [/var/log/a/*.log]\n"
                    "    paths: [/var/log/b/*.log]\n"),
            "f.yaml:4: sources[0].paths: duplicate key (first at line 3; a second value would be "
            "ignored)");
  EXPECT_THAT(ErrorOf("sources:\n  - {type: file, paths: [x]}\nhttp: {listen: "
                      "127.0.0.1:1}\nhttp: {listen: 127.0.0.1:2}\n"),
              HasSubstr("f.yaml:4: http: duplicate key (first at line 3;"));
  EXPECT_THAT(ErrorOf("sources:\n  - {type: file, paths: [x], labels: {pod: a, pod: b}}\n"),
              HasSubstr("f.yaml:2: sources[0].labels.pod: duplicate key"));
}

TEST(ConfigTest, AnEmptyDeploymentLabelIsRefusedByRunAsByReplay) {
  EXPECT_EQ(ErrorOf("sources:\n  - {type: file, paths: [x], labels: {deployment: \"\"}}\n"),
            "f.yaml:2: sources[0].labels: label 'deployment' has an empty value");
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp, labels: {deployment: ''}}\n"),
              HasSubstr("sources[0].labels: label 'deployment' has an empty value"));
  // `run --label` (with a config or the one-source form) and `replay --label`: one check.
  auto labels = ParseLabelFlags({"deployment="});
  ASSERT_FALSE(labels.ok());
  EXPECT_EQ(labels.status().message(), "--label: 'deployment=' has an empty value");
  RunFlags flags;
  flags.paths = {"x.log"};
  flags.labels = {"deployment="};
  EXPECT_EQ(ConfigFromFlags(flags).status().message(), "--label: 'deployment=' has an empty value");
  flags.labels = {"deployment=a", "deployment=b"};
  EXPECT_EQ(ConfigFromFlags(flags).status().message(),
            "--label: 'deployment' given twice ('deployment=a', 'deployment=b')");
}

TEST(ConfigTest, TwoSourcesOnOnePortOrOneSocketPathFailConfigCheck) {
  EXPECT_EQ(ErrorOf("sources:\n"
                    "  - {type: tcp, listen: 127.0.0.1:5170}\n"
                    "  - {type: tcp, listen: 'localhost:5170'}\n"),
            "f.yaml:3: sources[1].listen: 'localhost:5170' takes the port of sources[0] (line 2), "
            "'127.0.0.1:5170'");
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp}\n  - {type: tcp}\n"),
              HasSubstr("f.yaml:3: sources[1].listen: '127.0.0.1:5170' takes the port of"));
  EXPECT_THAT(ErrorOf("sources:\n"
                      "  - {type: tcp, listen: '0.0.0.0:7000', allow_remote: true}\n"
                      "  - {type: tcp, listen: '127.0.0.1:7000'}\n"),
              HasSubstr("f.yaml:3: sources[1].listen: '127.0.0.1:7000' takes the port of"));
  EXPECT_EQ(ErrorOf("sources:\n"
                    "  - {type: unix, path: /run/f.sock}\n"
                    "  - {type: unix, path: /run/f.sock}\n"),
            "f.yaml:3: sources[1].path: '/run/f.sock' is the socket of sources[0] (line 2) too");
  EXPECT_THAT(ErrorOf("sources:\n  - {type: tcp, listen: 127.0.0.1:9464}\n"),
              HasSubstr("f.yaml:2: sources[0].listen: '127.0.0.1:9464' takes the port of "
                        "http.listen"));
  // Port 0 (any free port), other ports and other loopback hosts do not clash.
  EXPECT_EQ(ErrorOf("sources:\n"
                    "  - {type: tcp, listen: 127.0.0.1:0}\n"
                    "  - {type: tcp, listen: 127.0.0.1:0}\n"
                    "  - {type: tcp, listen: 127.0.0.1:5171}\n"
                    "  - {type: tcp, listen: 127.0.0.2:5171}\n"
                    "  - {type: unix, path: /run/a.sock}\n"
                    "  - {type: unix, path: /run/b.sock}\n"),
            "(ok)");
}

}  // namespace
}  // namespace fingerprintd::config
